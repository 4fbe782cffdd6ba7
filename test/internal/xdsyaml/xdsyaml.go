// Package xdsyaml writes the Envoy resource YAML the e2e tests and
// benchmarks commit to config repositories: the configuration a proxyless
// gRPC client follows, an api_listener Listener whose HttpConnectionManager
// loads its route configuration over RDS from ADS, that RouteConfiguration,
// and EDS or STATIC clusters with one endpoint on loopback.
//
// Each function returns one YAML document, without a separator; Join puts
// documents into one multi-document file.
package xdsyaml

import (
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/config/v1alpha1"
)

// Join returns the documents as one multi-document YAML file.
func Join(docs ...string) string { return strings.Join(docs, "---\n") }

// APIListener is a Listener named name for gRPC clients (an api_listener)
// whose HttpConnectionManager, with stat prefix statPrefix and the router
// filter, loads route configuration routeConfigName over ADS.
func APIListener(name, statPrefix, routeConfigName string) string {
	return fmt.Sprintf(`"@type": type.googleapis.com/envoy.config.listener.v3.Listener
name: %q
api_listener:
  api_listener:
    "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
    stat_prefix: %q
    rds:
      route_config_name: %q
      config_source: {ads: {}, resource_api_version: V3}
    http_filters:
    - name: envoy.filters.http.router
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
`, name, statPrefix, routeConfigName)
}

// Route is one route of a virtual host: requests whose path starts with
// Prefix ("" matches all) go to Cluster. Name is optional.
type Route struct {
	Name    string
	Prefix  string
	Cluster string
}

// RouteConfiguration is a RouteConfiguration named name with one virtual
// host, vhost, for every domain, holding routes in order.
func RouteConfiguration(name, vhost string, routes ...Route) string {
	var b strings.Builder
	fmt.Fprintf(&b, `"@type": type.googleapis.com/envoy.config.route.v3.RouteConfiguration
name: %q
virtual_hosts:
- name: %q
  domains: ["*"]
  routes:
`, name, vhost)
	for _, r := range routes {
		b.WriteString("  - ")
		if r.Name != "" {
			fmt.Fprintf(&b, "name: %q\n    ", r.Name)
		}
		fmt.Fprintf(&b, "match: {prefix: %q}\n    route: {cluster: %q}\n", r.Prefix, r.Cluster)
	}
	return b.String()
}

// EDSCluster is a Cluster named name whose endpoints come over ADS.
func EDSCluster(name string) string {
	return fmt.Sprintf(`"@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
name: %q
type: EDS
connect_timeout: 1s
eds_cluster_config:
  eds_config: {ads: {}, resource_api_version: V3}
`, name)
}

// StaticCluster is a STATIC Cluster named name with one endpoint,
// 127.0.0.1:port. Envoy and legate accept it; grpc-go rejects the cluster
// type.
func StaticCluster(name string, port int) string {
	return fmt.Sprintf(`"@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
name: %[1]q
type: STATIC
connect_timeout: 1s
load_assignment:
  cluster_name: %[1]q
  endpoints:
  - lb_endpoints:
    - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %[2]d}}}
`, name, port)
}

// Endpoints is the ClusterLoadAssignment of cluster: one endpoint,
// 127.0.0.1:port, in a locality of weight 1 (grpc-go ignores localities
// without a weight).
func Endpoints(cluster string, port int) string {
	return fmt.Sprintf(`"@type": type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment
cluster_name: %q
endpoints:
- locality: {region: local}
  load_balancing_weight: 1
  lb_endpoints:
  - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}
`, cluster, port)
}

// WithField appends the top-level field "key: value" to document doc. The
// tests use it to add a field the message does not have, which legate's
// renderer rejects with the field's file and line.
func WithField(doc, key, value string) string { return doc + key + ": " + value + "\n" }

// marin3rType is the resources[].type of an Envoy message.
var marin3rType = map[string]string{
	"type.googleapis.com/envoy.config.listener.v3.Listener":              "listener",
	"type.googleapis.com/envoy.config.route.v3.RouteConfiguration":       "route",
	"type.googleapis.com/envoy.config.cluster.v3.Cluster":                "cluster",
	"type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment": "endpoint",
}

// EnvoyConfig is an EnvoyConfig object of node in namespace default made of
// resource documents (with "@type"), in MARIN3R's {type, value} form.
func EnvoyConfig(node string, docs ...string) (*v1alpha1.EnvoyConfig, error) {
	ec := &v1alpha1.EnvoyConfig{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: "default"}, Spec: v1alpha1.EnvoyConfigSpec{NodeID: node}}
	for _, doc := range docs {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			return nil, err
		}
		url, _ := m["@type"].(string)
		typ := marin3rType[url]
		if typ == "" {
			return nil, fmt.Errorf("no MARIN3R type for %q", url)
		}
		delete(m, "@type")
		raw, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		ec.Spec.Resources = append(ec.Spec.Resources, v1alpha1.Resource{Type: typ, Value: &runtime.RawExtension{Raw: raw}})
	}
	return ec, nil
}
