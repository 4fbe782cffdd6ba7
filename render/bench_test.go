package render

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
)

const routesPerConfig = 100

// syntheticRepo builds a filesystem-xDS repository in JSON with n routes
// spread over route configurations of up to 100 routes, one listener per
// route configuration (RDS), and one EDS cluster and load assignment per
// route.
func syntheticRepo(n int) fstest.MapFS {
	configs := (n + routesPerConfig - 1) / routesPerConfig
	var listeners, routes, clusters, endpoints []string
	for c := 0; c < configs; c++ {
		listeners = append(listeners, fmt.Sprintf(`{"@type":%q,"name":"listener-%d","address":{"socket_address":{"address":"0.0.0.0","port_value":%d}},"filter_chains":[{"filters":[{"name":"envoy.filters.network.http_connection_manager","typed_config":{"@type":"type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager","stat_prefix":"http-%d","rds":{"route_config_name":"routes-%d","config_source":{"ads":{},"resource_api_version":"V3"}},"http_filters":[{"name":"envoy.filters.http.router","typed_config":{"@type":"type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}]}}]}]}`,
			ListenerType, c, 10000+c, c, c))
		var rs []string
		for i := c * routesPerConfig; i < n && i < (c+1)*routesPerConfig; i++ {
			rs = append(rs, fmt.Sprintf(`{"match":{"prefix":"/svc-%d/"},"route":{"cluster":"svc-%d","timeout":"5s"}}`, i, i))
		}
		routes = append(routes, fmt.Sprintf(`{"@type":%q,"name":"routes-%d","virtual_hosts":[{"name":"vh-%d","domains":["svc-%d.example.com"],"routes":[%s]}]}`,
			RouteType, c, c, c, strings.Join(rs, ",")))
	}
	for i := 0; i < n; i++ {
		clusters = append(clusters, fmt.Sprintf(`{"@type":%q,"name":"svc-%d","type":"EDS","connect_timeout":"1s","lb_policy":"ROUND_ROBIN","eds_cluster_config":{"eds_config":{"ads":{},"resource_api_version":"V3"}}}`, ClusterType, i))
		endpoints = append(endpoints, fmt.Sprintf(`{"@type":%q,"cluster_name":"svc-%d","endpoints":[{"lb_endpoints":[{"endpoint":{"address":{"socket_address":{"address":"10.0.%d.%d","port_value":8080}}}}]}]}`, EndpointType, i, i/250, i%250+1))
	}
	file := func(rs []string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("{\n\"version_info\": \"1\",\n\"resources\": [\n" + strings.Join(rs, ",\n") + "\n]\n}\n")}
	}
	return fstest.MapFS{
		"nodes/bench/listeners.json": file(listeners),
		"nodes/bench/routes.json":    file(routes),
		"nodes/bench/clusters.json":  file(clusters),
		"nodes/bench/endpoints.json": file(endpoints),
	}
}

// baseline decodes every file with protojson and calls ValidateAll on each
// resource: no positions, no Any recursion, no references, no hashing.
func baseline(fsys fstest.MapFS) error {
	for _, f := range fsys {
		var dr discoveryv3.DiscoveryResponse
		if err := protojson.Unmarshal(f.Data, &dr); err != nil {
			return err
		}
		for _, a := range dr.GetResources() {
			m, err := a.UnmarshalNew()
			if err != nil {
				return err
			}
			if v, ok := m.(interface{ ValidateAll() error }); ok {
				if err := v.ValidateAll(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

var benchSizes = []int{10, 100, 1000, 10000}

func BenchmarkRender(b *testing.B) {
	for _, n := range benchSizes {
		fsys := syntheticRepo(n)
		b.Run(fmt.Sprintf("routes=%d/baseline", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := baseline(fsys); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("routes=%d/render", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if res := Render(fsys, Options{}); !res.OK() {
					b.Fatal(res.Diagnostics[0].String())
				}
			}
		})
	}
}

func TestSyntheticRepoRenders(t *testing.T) {
	res := Render(syntheticRepo(250), Options{})
	require.True(t, res.OK(), "%v", res.Diagnostics)
	require.NoError(t, baseline(syntheticRepo(250)))
	nc := res.Nodes["bench"]
	require.Len(t, nc.Types[ClusterType].Resources, 250)
	require.Len(t, nc.Types[ListenerType].Resources, 3)
}
