package render

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
)

// verdict renders files (path → content) for node "n" and returns the
// errors and warnings as compiler-style lines.
func verdict(t *testing.T, files map[string]string) (errs, warns []string) {
	t.Helper()
	fsys := fstest.MapFS{}
	for p, data := range files {
		fsys[p] = &fstest.MapFile{Data: []byte(data)}
	}
	res := Render(fsys, Options{DefaultNode: "n"})
	errs, warns = []string{}, []string{}
	for _, d := range res.Diagnostics {
		errs = append(errs, d.String())
	}
	for _, d := range res.Warnings {
		warns = append(warns, d.String())
	}
	if len(res.Diagnostics) == 0 {
		assert.NotNil(t, res.Nodes, "a render without errors has nodes")
	}
	return errs, warns
}

func routeWithFilterConfig(fc string) string {
	return `"@type": type.googleapis.com/envoy.config.route.v3.RouteConfiguration
name: r
virtual_hosts:
- name: v
  domains: ["*"]
  routes:
  - match: {prefix: /}
    direct_response: {status: 200}
    typed_per_filter_config:
      envoy.filters.http.buffer:
        "@type": type.googleapis.com/envoy.config.route.v3.FilterConfig
` + fc
}

// Envoy Gateway re-enables per route a filter it disabled in the
// connection manager with an empty config; only a FilterConfig that
// neither configures nor disables the filter is refused.
func TestFilterConfigEmptyConfig(t *testing.T) {
	errs, _ := verdict(t, map[string]string{"r.yaml": routeWithFilterConfig("        config: {}\n")})
	assert.Empty(t, errs)
	errs, _ = verdict(t, map[string]string{"r.yaml": routeWithFilterConfig("        disabled: true\n")})
	assert.Empty(t, errs)
	errs, _ = verdict(t, map[string]string{"r.yaml": routeWithFilterConfig("        is_optional: true\n")})
	assert.Equal(t, []string{`r.yaml:11:9: route "r" virtual_hosts[0].routes[0].typed_per_filter_config["envoy.filters.http.buffer"]: FilterConfig has no config and is not disabled, which Envoy refuses: set config ({} enables the filter on this route) or disabled: true`}, errs)
}

// Envoy's loader reads enum names case-insensitively (its own examples
// write `codec_type: auto`); a name that matches nothing is explained with
// the valid names, the closest first suggested, under the field's YAML
// spelling.
func TestEnumNames(t *testing.T) {
	listener := `"@type": type.googleapis.com/envoy.config.listener.v3.Listener
name: l
address: {socket_address: {address: 0.0.0.0, port_value: 8080}}
filter_chains:
- filters:
  - name: envoy.filters.network.http_connection_manager
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
      stat_prefix: x
      codec_type: auto
      route_config: {name: r}
      http_filters:
      - name: envoy.filters.http.router
        typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
`
	cluster := "\"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\nname: c\nconnect_timeout: 1s\n"
	errs, _ := verdict(t, map[string]string{"l.yaml": listener, "c.yaml": cluster + "lb_policy: round_robin\n"})
	assert.Empty(t, errs)
	errs, _ = verdict(t, map[string]string{"c.yaml": cluster + "lbPolicy: ROUND_ROBN\n"})
	assert.Equal(t, []string{`c.yaml:4:11: cluster "c" lbPolicy: "ROUND_ROBN" is not one of ROUND_ROBIN, LEAST_REQUEST, RING_HASH, RANDOM, MAGLEV, CLUSTER_PROVIDED, LOAD_BALANCING_POLICY_CONFIG; did you mean ROUND_ROBIN?`}, errs)
	errs, _ = verdict(t, map[string]string{"c.yaml": cluster + "lb_policy: fastest\n"})
	assert.Equal(t, []string{`c.yaml:4:12: cluster "c" lb_policy: "fastest" is not one of ROUND_ROBIN, LEAST_REQUEST, RING_HASH, RANDOM, MAGLEV, CLUSTER_PROVIDED, LOAD_BALANCING_POLICY_CONFIG`}, errs)
}

// A route to a missing cluster is an error where Envoy rejects it (inline
// route configurations, validate_clusters: true) and otherwise a warning
// that a legate.yaml setting turns into an error.
func TestMissingClusters(t *testing.T) {
	rds := func(extra string) string {
		return `"@type": type.googleapis.com/envoy.config.route.v3.RouteConfiguration
name: r
` + extra + `virtual_hosts:
- name: v
  domains: ["*"]
  routes:
  - match: {prefix: /}
    route: {cluster: nope}
`
	}
	inline := `"@type": type.googleapis.com/envoy.config.listener.v3.Listener
name: l
address: {socket_address: {address: 0.0.0.0, port_value: 8080}}
filter_chains:
- filters:
  - name: envoy.filters.network.http_connection_manager
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
      stat_prefix: x
      route_config:
        virtual_hosts:
        - name: v
          domains: ["*"]
          routes:
          - match: {prefix: /}
            route: {cluster: nope}
      http_filters:
      - name: envoy.filters.http.router
        typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
`
	warning := `r.yaml:8:22: warning: route "r" virtual_hosts[0].routes[0].route.cluster: cluster "nope" is not defined for node "n": Envoy accepts this and fails the requests (503 for a route) at run time; to refuse it, set strict: {missingClusters: error} in legate.yaml`
	tests := []struct {
		name        string
		files       map[string]string
		errs, warns []string
	}{
		{"rds", map[string]string{"r.yaml": rds("")}, []string{}, []string{warning}},
		{"rds validate_clusters false", map[string]string{"r.yaml": rds("validate_clusters: false\n")}, []string{}, []string{`r.yaml:9:22: warning: route "r" virtual_hosts[0].routes[0].route.cluster: cluster "nope" is not defined for node "n": Envoy accepts this and fails the requests (503 for a route) at run time; to refuse it, set strict: {missingClusters: error} in legate.yaml`}},
		{"rds validate_clusters true", map[string]string{"r.yaml": rds("validate_clusters: true\n")}, []string{`r.yaml:9:22: route "r" virtual_hosts[0].routes[0].route.cluster: cluster "nope" is not defined for node "n" (Envoy rejects it: validate_clusters is true)`}, []string{}},
		{"rds strict", map[string]string{"r.yaml": rds(""), "legate.yaml": "strict: {missingClusters: error}\n"}, []string{`r.yaml:8:22: route "r" virtual_hosts[0].routes[0].route.cluster: cluster "nope" is not defined for node "n" (strict.missingClusters: error in legate.yaml)`}, []string{}},
		{"rds strict warning", map[string]string{"r.yaml": rds(""), "legate.yaml": "strict: {missingClusters: warning}\n"}, []string{}, []string{warning}},
		{"inline", map[string]string{"l.yaml": inline}, []string{`l.yaml:16:30: listener "l" filter_chains[0].filters[0].typed_config.route_config.virtual_hosts[0].routes[0].route.cluster: cluster "nope" is not defined for node "n" (Envoy rejects it: validate_clusters defaults to true for a route configuration inline in the listener)`}, []string{}},
		{"bad setting", map[string]string{"r.yaml": rds(""), "legate.yaml": "strict: {missingClusters: fatal}\n"}, []string{`legate.yaml:1:27: strict.missingClusters: "fatal" is not one of error, warning`}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs, warns := verdict(t, tt.files)
			assert.Equal(t, tt.errs, errs)
			assert.Equal(t, tt.warns, warns)
		})
	}
}

// The same secret listed twice with identical content is served once with
// a warning; differing content stays an error naming both places.
func TestDuplicateSecrets(t *testing.T) {
	secret := func(key string) string {
		return `"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret
name: s
generic_secret: {secret: {inline_string: ` + key + `}}
`
	}
	errs, warns := verdict(t, map[string]string{"a.yaml": secret("k1"), "b.yaml": secret("k1")})
	assert.Empty(t, errs)
	assert.Equal(t, []string{`b.yaml:1:1: warning: secret "s": secret "s" is listed again with identical content (first at a.yaml:1:1): served once`}, warns)
	errs, _ = verdict(t, map[string]string{"a.yaml": secret("k1"), "b.yaml": secret("k2")})
	assert.Equal(t, []string{`b.yaml:1:1: secret "s": duplicate secret name "s" for node "n": first defined at a.yaml:1:1`}, errs)
	ext := "apiVersion: marin3r.3scale.net/v1alpha1\nkind: EnvoyConfig\nmetadata: {name: e}\nspec:\n  nodeID: n\n  resources:\n  - {type: secret, generateFromTlsSecret: cert}\n  - {type: secret, generateFromTlsSecret: cert}\n"
	errs, warns = verdict(t, map[string]string{"e.yaml": ext})
	assert.Empty(t, errs)
	assert.Len(t, warns, 1)
}

// A syntax error is reported first, at its line and column, and a
// reference into the nodes of the file that failed to parse is reported
// once as not checked, never as a missing resource.
func TestSyntaxErrorIsTheRootCause(t *testing.T) {
	listener := `"@type": type.googleapis.com/envoy.config.listener.v3.Listener
name: l
address: {socket_address: {address: 0.0.0.0, port_value: 8080}}
filter_chains:
- filters:
  - name: envoy.filters.network.http_connection_manager
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
      stat_prefix: x
      rds: {route_config_name: edge-routes}
      http_filters:
      - name: envoy.filters.http.router
        typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
`
	routes := `resources:
- "@type": type.googleapis.com/envoy.config.route.v3.RouteConfiguration
  name: edge-routes
  virtual_hosts:
  - name: all
    domains: ["*"
    routes:
    - match: {prefix: /}
      direct_response: {status: 200}
`
	cluster := "\"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\nname: c\ncolour: blue\n"
	errs, warns := verdict(t, map[string]string{"a-cluster.yaml": cluster, "listener.yaml": listener, "routes.yaml": routes})
	assert.Equal(t, []string{
		`routes.yaml:6:14: did not find expected ',' or ']'`,
		`a-cluster.yaml:3:1: cluster "c" colour: unknown field "colour"`,
	}, errs)
	assert.Equal(t, []string{
		`listener.yaml:10:32: warning: listener "l" filter_chains[0].filters[0].typed_config.rds.route_config_name: route "edge-routes" not checked because routes.yaml failed to parse`,
	}, warns)
}

func TestSyntaxPositions(t *testing.T) {
	tests := []struct {
		doc       string
		line, col int
		msgPrefix string
	}{
		{"a: 1\nb: {x: 1\nc: 2\n", 2, 4, "did not find expected ',' or '}'"},
		{"a: 1\n b: 2\n", 2, 2, "mapping values are not allowed"},
		{"a: b: c\n", 1, 5, "mapping values are not allowed"},
		{"a: 1\nb: @x\n", 2, 4, "found character that cannot start any token"},
		{"a:\n\t- b\n", 2, 1, "found character that cannot start any token"},
		{"a: 1\nb:\n  - 1\n  c: 2\n", 3, 3, "did not find expected '-' indicator"},
		{"x: 1\n- y\n", 2, 1, "did not find expected key"},
		{"a: [1, [2\n", 1, 8, "did not find expected ',' or ']'"},
	}
	for _, tt := range tests {
		res := RenderDocuments([]Document{{Path: "x.yaml", Data: []byte(tt.doc)}}, Options{DefaultNode: "n"})
		if assert.Len(t, res.Diagnostics, 1, "%q", tt.doc) {
			d := res.Diagnostics[0]
			assert.Equal(t, Position{File: "x.yaml", Line: tt.line, Column: tt.col}, d.Pos, "%q: %s", tt.doc, d)
			assert.Equal(t, RuleSyntax, d.Rule)
			assert.Contains(t, d.Message, tt.msgPrefix)
		}
	}
}

// Every wrong top-level field of a bootstrap is reported, not the first.
func TestBootstrapTopLevelErrors(t *testing.T) {
	errs, _ := verdict(t, map[string]string{"b.yaml": "static_resources: {clusters: []}\nadmin: {bogus: 1}\nbogus_top: 2\nstats_flush_interval: soon\n"})
	assert.Equal(t, []string{
		`b.yaml:2:9: admin.bogus: unknown field "bogus"`,
		`b.yaml:3:1: bogus_top: unknown field "bogus_top"`,
		`b.yaml:4:23: stats_flush_interval: invalid google.protobuf.Duration value "soon"`,
	}, errs)
}

// A proxy bootstrap (configuration from a control plane) is checked on its
// own and its static resources are not served: two of them for one node
// do not collide. A static bootstrap is still served.
func TestProxyBootstraps(t *testing.T) {
	proxy := func(ca string) string {
		return `node: {id: edge}
dynamic_resources:
  ads_config: {api_type: GRPC, grpc_services: [{envoy_grpc: {cluster_name: ` + ca + `}}]}
  cds_config: {ads: {}}
  lds_config: {ads: {}}
static_resources:
  clusters:
  - name: legate
    type: STATIC
    load_assignment:
      cluster_name: legate
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 18000}}}}]}]
  listeners:
  - name: admin-proxy
    address: {socket_address: {address: 127.0.0.1, port_value: 9000}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.tcp_proxy
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy
          stat_prefix: admin
          cluster: legate
`
	}
	fsys := fstest.MapFS{
		"a/bootstrap.yaml": {Data: []byte(proxy("legate"))},
		"b/bootstrap.yaml": {Data: []byte(proxy("legate"))},
	}
	res := Render(fsys, Options{})
	assert.Empty(t, res.Diagnostics)
	assert.Empty(t, res.Nodes)

	fsys["b/bootstrap.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(proxy("legate"), "name: legate\n", "name: xds\n", 1))}
	res = Render(fsys, Options{})
	var got []string
	for _, d := range append(res.Diagnostics, res.Warnings...) {
		got = append(got, d.String())
	}
	assert.Contains(t, got, `b/bootstrap.yaml:22:20: warning: listener "admin-proxy" filter_chains[0].filters[0].typed_config.cluster: cluster "legate" is not defined in the bootstrap at b/bootstrap.yaml:1:1: Envoy accepts this and fails the requests (503 for a route) at run time; to refuse it, set strict: {missingClusters: error} in legate.yaml`)

	static := "node: {id: edge}\nstatic_resources:\n  clusters:\n  - {name: c, type: STATIC}\n"
	res = Render(fstest.MapFS{"a.yaml": {Data: []byte(static)}, "b.yaml": {Data: []byte(static)}}, Options{})
	assert.Len(t, res.Diagnostics, 1, "two static bootstraps for one node define the same cluster")
}

// Input legate cannot act on in this home is reported, naming the file
// and the home that supports it.
func TestEndpointSlicesNeedTheKubernetesHome(t *testing.T) {
	doc := `apiVersion: marin3r.3scale.net/v1alpha1
kind: EnvoyConfig
metadata: {name: e}
spec:
  nodeID: n
  resources:
  - type: cluster
    value: {name: api, type: EDS, eds_cluster_config: {eds_config: {ads: {}}}}
  - type: endpoint
    generateFromEndpointSlices: {selector: {matchLabels: {app: api}}, clusterName: api, targetPort: http}
`
	errs, warns := verdict(t, map[string]string{"e.yaml": doc})
	assert.Empty(t, errs)
	assert.Equal(t, []string{`e.yaml:10:33: warning: generateFromEndpointSlices is acted on only by the Kubernetes home, which builds endpoints from EndpointSlices; here (legate serve, legate validate) cluster "api" gets no endpoints from it: list them in a resource of type endpoint`}, warns)
	res := RenderDocuments([]Document{{Path: "e.yaml", Data: []byte(doc)}}, Options{EndpointSlices: true})
	assert.Empty(t, res.Warnings)
	assert.True(t, res.OK())
}

// Envoy's v2 API is gone: say so and name the v3 type.
func TestV2Types(t *testing.T) {
	errs, _ := verdict(t, map[string]string{
		"c.yaml": "\"@type\": type.googleapis.com/envoy.api.v2.Cluster\nname: c\n",
		"r.yaml": "resources:\n- \"@type\": type.googleapis.com/envoy.api.v2.RouteConfiguration\n  name: r\n",
		"l.yaml": `"@type": type.googleapis.com/envoy.config.listener.v3.Listener
name: l
address: {socket_address: {address: 0.0.0.0, port_value: 8080}}
filter_chains:
- filters:
  - name: envoy.filters.network.http_connection_manager
    typed_config: {"@type": type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager}
`,
		"m.yaml": "apiVersion: marin3r.3scale.net/v1alpha1\nkind: EnvoyConfig\nmetadata: {name: m}\nspec: {nodeID: m, envoyAPI: v2, resources: []}\n",
	})
	assert.Equal(t, []string{
		`c.yaml:1:10: @type "type.googleapis.com/envoy.api.v2.Cluster" is of Envoy's v2 API, which was removed (Envoy 1.18 reads only v3): use type.googleapis.com/envoy.config.cluster.v3.Cluster`,
		`l.yaml:7:29: listener "l" filter_chains[0].filters[0].typed_config.@type: "type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager" is of Envoy's v2 API, which was removed (Envoy 1.18 reads only v3): use type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager`,
		`m.yaml:4:29: envoyAPI "v2": Envoy's v2 API was removed (Envoy 1.18 reads only v3): set envoyAPI: v3 and write v3 resources`,
		`r.yaml:2:12: @type "type.googleapis.com/envoy.api.v2.RouteConfiguration" is of Envoy's v2 API, which was removed (Envoy 1.18 reads only v3): use type.googleapis.com/envoy.config.route.v3.RouteConfiguration`,
	}, errs)
}

// Load-time rules of Envoy that protobuf validation does not express.
func TestLoadTimeRules(t *testing.T) {
	listener := func(name string, port int, chains string) string {
		return fmt.Sprintf(`"@type": type.googleapis.com/envoy.config.listener.v3.Listener
name: %s
address: {socket_address: {address: 0.0.0.0, port_value: %d}}
filter_chains:
%s`, name, port, chains)
	}
	tcp := `  - name: tcp
    typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: t, cluster: c}
`
	rbac := `  - name: rbac
    typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC, stat_prefix: r}
`
	cluster := "---\n\"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\nname: c\n"
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"rbac then tcp_proxy", listener("l", 1, "- filters:\n"+rbac+tcp), []string{}},
		{"empty chain", listener("l", 1, "- filters: []\n"), []string{}},
		{"terminal not last", listener("l", 1, "- filters:\n"+tcp+rbac), []string{
			`x.yaml:6:5: listener "l" filter_chains[0].filters[0]: "tcp" is a terminal filter and must be the last of its filter chain, which Envoy enforces: filters after it never run`,
			`x.yaml:8:5: listener "l" filter_chains[0].filters[1]: "rbac" is not a terminal filter and is the last of its filter chain, which Envoy refuses: end the chain with a terminal filter such as tcp_proxy or http_connection_manager`,
		}},
		{"same filter_chain_match", listener("l", 1, "- filters:\n"+tcp+"- filters:\n"+tcp), []string{
			`x.yaml:8:3: listener "l" filter_chains[1]: filter chain matches the same connections as filter_chains[0] (equal filter_chain_match), which Envoy refuses`,
		}},
		{"different server names", listener("l", 1, "- filter_chain_match: {server_names: [a]}\n  filters:\n"+tcp+"- filter_chain_match: {server_names: [b]}\n  filters:\n"+tcp), []string{}},
		{"same address twice", listener("a", 1, "- filters:\n"+tcp) + "---\n" + listener("b", 1, "- filters:\n"+tcp), []string{
			`x.yaml:11:27: listener "b" address: address 0.0.0.0:1 is already used by listener "a" (x.yaml:1:1) for node "n"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs, _ := verdict(t, map[string]string{"x.yaml": tt.doc + cluster})
			assert.Equal(t, tt.want, errs)
		})
	}
	// The same domain in two virtual hosts of one route configuration.
	errs, _ := verdict(t, map[string]string{"r.yaml": `"@type": type.googleapis.com/envoy.config.route.v3.RouteConfiguration
name: r
virtual_hosts:
- {name: a, domains: [example.com], routes: [{match: {prefix: /}, direct_response: {status: 200}}]}
- {name: b, domains: [EXAMPLE.com], routes: [{match: {prefix: /}, direct_response: {status: 200}}]}
`})
	assert.Equal(t, []string{`r.yaml:5:23: route "r" virtual_hosts[1].domains[0]: domain "EXAMPLE.com" is already used by virtual host "a": each domain may appear once per route configuration`}, errs)
}
