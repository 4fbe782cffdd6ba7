package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/test/internal/gitrepo"
)

// newGitRepo creates a local Git repository on branch main for legate to
// follow.
func newGitRepo(t testing.TB) *gitrepo.Repo {
	t.Helper()
	return gitrepo.New(t, "legate e2e", "e2e@legate.invalid")
}

// The test configuration: proxyless gRPC clients dial xds:///greeter as
// node e2e. The listener routes every RPC to one of two EDS clusters,
// backend-a and backend-b, each with one endpoint on loopback.
const (
	nodeID       = "e2e"
	listenerName = "greeter"
	configFile   = "greeter.yaml"
)

// greeterConfig describes one commit of the configuration.
type greeterConfig struct {
	// route is the cluster every RPC goes to: "backend-a" or "backend-b".
	route string
	// staticB makes backend-b a STATIC cluster: valid for legate and
	// Envoy, rejected by grpc-go ("unsupported cluster type").
	staticB bool
	// invalid adds a field the Cluster message does not have, which the
	// renderer rejects.
	invalid bool
	// runtime adds an RTDS runtime layer, a type grpc-go never asks for.
	runtime bool
	// portA and portB are the backends' ports.
	portA, portB int
}

// files renders the configuration as the repository's files.
func (c greeterConfig) files() map[string]string {
	var b strings.Builder
	fmt.Fprintf(&b, `"@type": type.googleapis.com/envoy.config.listener.v3.Listener
name: %s
api_listener:
  api_listener:
    "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
    stat_prefix: greeter
    rds:
      route_config_name: greeter-routes
      config_source:
        ads: {}
        resource_api_version: V3
    http_filters:
    - name: envoy.filters.http.router
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
---
"@type": type.googleapis.com/envoy.config.route.v3.RouteConfiguration
name: greeter-routes
virtual_hosts:
- name: greeter
  domains: ["*"]
  routes:
  - match:
      prefix: ""
    route:
      cluster: %s
`, listenerName, c.route)
	b.WriteString(edsCluster("backend-a", c.invalid))
	b.WriteString(endpoints("backend-a", c.portA))
	if c.staticB {
		fmt.Fprintf(&b, `---
"@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
name: backend-b
type: STATIC
connect_timeout: 1s
load_assignment:
  cluster_name: backend-b
  endpoints:
  - lb_endpoints:
    - endpoint:
        address:
          socket_address:
            address: 127.0.0.1
            port_value: %d
`, c.portB)
	} else {
		b.WriteString(edsCluster("backend-b", false))
		b.WriteString(endpoints("backend-b", c.portB))
	}
	if c.runtime {
		b.WriteString(`---
"@type": type.googleapis.com/envoy.service.runtime.v3.Runtime
name: greeter-runtime
layer:
  health_check:
    min_interval: 5
`)
	}
	return map[string]string{
		configFile:    b.String(),
		"legate.yaml": "nodeIDs: [" + nodeID + "]\n",
	}
}

func edsCluster(name string, invalid bool) string {
	s := fmt.Sprintf(`---
"@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
name: %s
type: EDS
lb_policy: ROUND_ROBIN
connect_timeout: 1s
eds_cluster_config:
  eds_config:
    ads: {}
    resource_api_version: V3
`, name)
	if invalid {
		s += "  bogus_field: 3\n"
	}
	return s
}

func endpoints(name string, port int) string {
	return fmt.Sprintf(`---
"@type": type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment
cluster_name: %s
endpoints:
- locality:
    region: local
  load_balancing_weight: 1
  lb_endpoints:
  - endpoint:
      address:
        socket_address:
          address: 127.0.0.1
          port_value: %d
`, name, port)
}

// lineOf returns the 1-based line of the first line of content holding
// substr.
func lineOf(t testing.TB, content, substr string) int {
	t.Helper()
	for i, l := range strings.Split(content, "\n") {
		if strings.Contains(l, substr) {
			return i + 1
		}
	}
	require.FailNow(t, "substring not found", "%q", substr)
	return 0
}
