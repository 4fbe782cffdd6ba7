package main

import (
	"fmt"
	"strings"
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
	var b strings.Builder
	fmt.Fprintf(&b, `"@type": type.googleapis.com/envoy.config.listener.v3.Listener
name: %s
api_listener:
  api_listener:
    "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
    stat_prefix: bench
    rds:
      route_config_name: %s
      config_source:
        ads: {}
        resource_api_version: V3
    http_filters:
    - name: envoy.filters.http.router
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
---
"@type": type.googleapis.com/envoy.config.route.v3.RouteConfiguration
name: %s
virtual_hosts:
- name: bench
  domains: ["*"]
  routes:
`, benchListener, benchRoutes, benchRoutes)
	for i := range routes - 1 {
		fmt.Fprintf(&b, `  - name: svc-%04d
    match:
      prefix: /bench.Svc%04d/
    route:
      cluster: %s
`, i, i, benchCluster)
	}
	// The last route catches everything else.
	fmt.Fprintf(&b, `  - name: default-gen-%d
    match:
      prefix: ""
    route:
      cluster: %s
---
"@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
name: %s
type: EDS
connect_timeout: 1s
eds_cluster_config:
  eds_config:
    ads: {}
    resource_api_version: V3
---
"@type": type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment
cluster_name: %s
endpoints:
# grpc-go ignores localities without a weight.
- locality:
    region: local
  load_balancing_weight: 1
  lb_endpoints:
  - endpoint:
      address:
        socket_address:
          address: 127.0.0.1
          port_value: %d
`, gen, benchCluster, benchCluster, benchCluster, port)
	return map[string]string{
		benchFile:     b.String(),
		"legate.yaml": "nodeIDs: [" + benchNode + "]\n",
	}
}
