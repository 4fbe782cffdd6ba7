package main

import (
	"fmt"

	"github.com/legate-dev/legate/test/internal/xdsyaml"
)

// The benchmark's configuration: grpc-go clients of node benchNode dial
// xds:///bench-greeter; the listener loads a route configuration of
// `routes` routes over RDS, all to one EDS cluster with one endpoint.
const (
	benchNode     = "bench"
	benchListener = "bench-greeter"
	benchRoutes   = "bench-routes"
	benchCluster  = "bench-backend"
	benchFile     = "greeter.yaml"
)

// configFiles renders commit gen of the configuration: routes routes, the
// last of which carries gen in its name, so every commit is new content (a
// new revision) that changes one route of the route configuration, as a
// typical routing change does.
func configFiles(routes, gen, port int) map[string]string {
	rs := make([]xdsyaml.Route, 0, routes)
	for i := range routes - 1 {
		rs = append(rs, xdsyaml.Route{
			Name:    fmt.Sprintf("svc-%04d", i),
			Prefix:  fmt.Sprintf("/bench.Svc%04d/", i),
			Cluster: benchCluster,
		})
	}
	// The last route catches everything else.
	rs = append(rs, xdsyaml.Route{Name: fmt.Sprintf("default-gen-%d", gen), Prefix: "", Cluster: benchCluster})
	return map[string]string{
		benchFile: xdsyaml.Join(
			xdsyaml.APIListener(benchListener, "bench", benchRoutes),
			xdsyaml.RouteConfiguration(benchRoutes, "bench", rs...),
			xdsyaml.EDSCluster(benchCluster),
			xdsyaml.Endpoints(benchCluster, port),
		),
		"legate.yaml": "nodeIDs: [" + benchNode + "]\n",
	}
}
