package preview

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
)

// cluster is a filesystem-xDS file holding one cluster per name, with the
// given connect timeout.
func clusters(timeout string, names ...string) *fstest.MapFile {
	var b strings.Builder
	b.WriteString("resources:\n")
	for _, n := range names {
		fmt.Fprintf(&b, `- "@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
  name: %s
  type: STATIC
  connect_timeout: %s
  load_assignment:
    cluster_name: %s
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 8080}}}
`, n, timeout, n)
	}
	return &fstest.MapFile{Data: []byte(b.String())}
}

// listener is a filesystem-xDS file with one listener routing / to
// cluster.
func listener(name, cluster string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte(fmt.Sprintf(`resources:
- "@type": type.googleapis.com/envoy.config.listener.v3.Listener
  name: %s
  address: {socket_address: {address: 127.0.0.1, port_value: 10000}}
  filter_chains:
  - filters:
    - name: envoy.filters.network.http_connection_manager
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
        stat_prefix: http
        route_config:
          virtual_hosts:
          - name: all
            domains: ["*"]
            routes:
            - match: {prefix: /}
              route: {cluster: %s}
        http_filters:
        - name: envoy.filters.http.router
          typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
`, name, cluster))}
}

// renderFleet renders fsys as legate validate does without CUE, and
// requires it valid.
func renderFleet(t testing.TB, fsys fstest.MapFS) Fleet {
	t.Helper()
	res := render.Render(fsys, render.Options{})
	require.Empty(t, res.Diagnostics, "the fixture renders")
	return FleetOf(res)
}
