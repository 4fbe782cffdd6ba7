package render

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
)

const (
	routerTypeURL = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
	routerName    = "envoy.filters.http.router"
)

// ref is a name one resource uses that another resource of the same node
// must define.
type ref struct {
	it     *item
	path   []string
	target string // type URL
	name   string
	// soft marks a cluster reference Envoy accepts when the cluster is
	// missing (RDS without validate_clusters, TCP proxy); hard says why
	// Envoy rejects one that is not soft (an index into hardReasons).
	soft bool
	hard uint8
}

// hardReasons say why Envoy rejects a route to a missing cluster.
var hardReasons = [...]string{
	"",
	"Envoy rejects it: validate_clusters is true",
	"Envoy rejects it: validate_clusters defaults to true for a route configuration inline in the listener",
}

// routeScope is a route configuration met while walking a resource, so
// that its routes know whether Envoy validates their clusters.
type routeScope struct {
	prefix   []string
	validate bool
	why      uint8 // index into hardReasons
}

// checker collects what the rules find in one item, so that items can be
// checked in parallel and merged in a fixed order.
type checker struct {
	it     *item
	diags  []Diagnostic
	refs   []ref
	scopes []routeScope
	// stopped is the render's stop flag, read at every message.
	stopped *atomic.Bool
}

// validate runs PGV over every decoded resource (descending into every
// Any) and the rules local to one resource, and collects the references
// to resolve once all resources are known. It returns the resources for
// the Checks.
func (r *renderer) validate() []*Decoded {
	var todo []*item
	for _, it := range r.items {
		if it.msg != nil {
			todo = append(todo, it)
		}
	}
	checkers := make([]checker, len(todo))
	parallel(len(todo), func(i int) {
		c := &checkers[i]
		c.it = todo[i]
		c.stopped = &r.jw.budget.stopped
		if c.stopped.Load() {
			return
		}
		var vs []violation
		walkMessage(c.it.msg, nil, c.visit, &vs)
		nameField := "name"
		if c.it.kind.url == EndpointType {
			nameField = "cluster_name"
		}
		named := false
		for _, v := range vs {
			c.fieldDiag(v.path, RulePGV, "%s", v.msg)
			named = named || (len(v.path) == 1 && v.path[0] == nameField)
		}
		c.it.problems = append(c.it.problems, c.diags...)
		if c.it.unnamed && !named {
			c.diags = append(c.diags, c.it.diag(nil, RuleName, nameField+" is required: xDS clients ask for resources by name"))
		}
	})
	r.checkDeadline()
	out := make([]*Decoded, 0, len(todo))
	for i := range checkers {
		c := &checkers[i]
		r.diags = append(r.diags, c.diags...)
		r.refs = append(r.refs, c.refs...)
		it := c.it
		out = append(out, &Decoded{Nodes: it.nodes, TypeURL: it.kind.url, Name: it.displayName(), Message: it.msg, Source: it.pos(), it: it})
	}
	return out
}

// fieldDiag reports a rule broken at a field path of the item.
func (c *checker) fieldDiag(path []string, rule, format string, args ...any) {
	d := c.it.diag(nil, rule, fmt.Sprintf(format, args...))
	d.Field = joinPath(path)
	d.Pos = c.it.locate(d.Field)
	c.diags = append(c.diags, d)
}

func (c *checker) refer(path []string, target, name string, field ...string) {
	if name == "" {
		return
	}
	p := make([]string, 0, len(path)+len(field))
	p = append(append(p, path...), field...)
	c.refs = append(c.refs, ref{it: c.it, path: p, target: target, name: name})
}

// local reports whether a config source points at legate itself (ADS or
// self), so that the resource it names must be in the same render. An
// unset source counts as local.
func local(cs *corev3.ConfigSource) bool {
	return cs == nil || cs.GetAds() != nil || cs.GetSelf() != nil
}

// visit applies the per-message rules to a message of an item's tree.
func (c *checker) visit(path []string, m proto.Message) {
	if c.stopped != nil && c.stopped.Load() {
		panic(errStopped) // the render's boundary says why
	}
	switch m := m.(type) {
	case *hcmv3.HttpConnectionManager:
		if rds := m.GetRds(); rds != nil && local(rds.GetConfigSource()) {
			c.refer(path, RouteType, rds.GetRouteConfigName(), "rds", "route_config_name")
		}
		c.httpFilters(path, m.GetHttpFilters())
	case *routev3.RouteConfiguration:
		c.uniqueDomains(path, m)
		c.routeScope(path, m)
	case *listenerv3.Listener:
		c.filterChainMatches(path, m)
	case *listenerv3.FilterChain:
		c.networkFilters(path, m.GetFilters())
	case *routev3.FilterConfig:
		// Envoy refuses a per-route FilterConfig that neither configures
		// nor disables the filter; an empty `config: {}` enables it.
		if m.GetConfig() == nil && !m.GetDisabled() {
			c.fieldDiag(clonePath(path), RuleRoute,
				"FilterConfig has no config and is not disabled, which Envoy refuses: set config ({} enables the filter on this route) or disabled: true")
		}
	case *routev3.RouteAction:
		n := len(c.refs)
		c.refer(path, ClusterType, m.GetCluster(), "cluster")
		for i, w := range m.GetWeightedClusters().GetClusters() {
			c.refer(path, ClusterType, w.GetName(), "weighted_clusters", "clusters", indexSeg(i), "name")
		}
		for i, p := range m.GetRequestMirrorPolicies() {
			c.refer(path, ClusterType, p.GetCluster(), "request_mirror_policies", indexSeg(i), "cluster")
		}
		scope := c.scopeOf(path)
		for i := n; i < len(c.refs); i++ {
			c.refs[i].soft, c.refs[i].hard = !scope.validate, scope.why
		}
	case *tcpproxyv3.TcpProxy:
		// Envoy looks a TCP proxy's cluster up per connection: a missing
		// one closes the connection, it does not reject the listener.
		n := len(c.refs)
		c.refer(path, ClusterType, m.GetCluster(), "cluster")
		for i, w := range m.GetWeightedClusters().GetClusters() {
			c.refer(path, ClusterType, w.GetName(), "weighted_clusters", "clusters", indexSeg(i), "name")
		}
		for i := n; i < len(c.refs); i++ {
			c.refs[i].soft = true
		}
	case *routev3.ScopedRouteConfiguration:
		if m.GetRouteConfiguration() == nil {
			c.refer(path, RouteType, m.GetRouteConfigurationName(), "route_configuration_name")
		}
	case *clusterv3.Cluster:
		if m.GetType() == clusterv3.Cluster_EDS && local(m.GetEdsClusterConfig().GetEdsConfig()) {
			name := m.GetEdsClusterConfig().GetServiceName()
			field := []string{"eds_cluster_config", "service_name"}
			if name == "" {
				name, field = m.GetName(), []string{"name"}
			}
			c.refer(path, EndpointType, name, field...)
		}
	case *tlsv3.SdsSecretConfig:
		if local(m.GetSdsConfig()) {
			c.refer(path, SecretType, m.GetName(), "name")
		}
	}
}

// routeScope records whether Envoy validates the clusters of a route
// configuration at load: validate_clusters when set, otherwise true for a
// route configuration inline in a connection manager and false for one
// delivered over RDS (or SRDS).
func (c *checker) routeScope(path []string, rc *routev3.RouteConfiguration) {
	s := routeScope{prefix: clonePath(path)}
	switch vc := rc.GetValidateClusters(); {
	case vc != nil:
		s.validate = vc.GetValue()
		s.why = 1
	case len(path) > 0 && path[len(path)-1] == "route_config":
		s.validate = true
		s.why = 2
	}
	c.scopes = append(c.scopes, s)
}

// scopeOf returns the route configuration that encloses path (the walk
// visits a message before what it holds); none for a VirtualHost resource.
func (c *checker) scopeOf(path []string) routeScope {
	for i := len(c.scopes) - 1; i >= 0; i-- {
		if s := c.scopes[i]; len(s.prefix) <= len(path) && slices.Equal(s.prefix, path[:len(s.prefix)]) {
			return s
		}
	}
	return routeScope{}
}

// Network filters Envoy knows to be terminal (they must be last in a
// filter chain) and not terminal (they must not be last). Filters in
// neither list are not judged.
var (
	terminalNetworkFilters = map[string]bool{
		"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager": true,
		"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy":                            true,
		"envoy.extensions.filters.network.direct_response.v3.Config":                        true,
		"envoy.extensions.filters.network.echo.v3.Echo":                                     true,
		"envoy.extensions.filters.network.redis_proxy.v3.RedisProxy":                        true,
		"envoy.extensions.filters.network.thrift_proxy.v3.ThriftProxy":                      true,
		"envoy.extensions.filters.network.dubbo_proxy.v3.DubboProxy":                        true,
	}
	nonTerminalNetworkFilters = map[string]bool{
		"envoy.extensions.filters.network.rbac.v3.RBAC":                              true,
		"envoy.extensions.filters.network.ext_authz.v3.ExtAuthz":                     true,
		"envoy.extensions.filters.network.local_ratelimit.v3.LocalRateLimit":         true,
		"envoy.extensions.filters.network.ratelimit.v3.RateLimit":                    true,
		"envoy.extensions.filters.network.connection_limit.v3.ConnectionLimit":       true,
		"envoy.extensions.filters.network.sni_cluster.v3.SniCluster":                 true,
		"envoy.extensions.filters.network.mongo_proxy.v3.MongoProxy":                 true,
		"envoy.extensions.filters.network.mysql_proxy.v3.MySQLProxy":                 true,
		"envoy.extensions.filters.network.client_ssl_auth.v3.ClientSSLAuth":          true,
		"envoy.extensions.filters.network.zookeeper_proxy.v3.ZooKeeperProxy":         true,
		"envoy.extensions.filters.network.postgres_proxy.v3alpha.PostgresProxy":      true,
		"envoy.extensions.filters.network.sni_dynamic_forward_proxy.v3.FilterConfig": true,
	}
)

// networkFilters applies Envoy's load-time rule on a filter chain: a
// terminal filter is last, and the last filter is terminal (an empty
// chain is accepted).
func (c *checker) networkFilters(path []string, filters []*listenerv3.Filter) {
	for i, f := range filters {
		url := f.GetTypedConfig().GetTypeUrl()
		name := url[strings.LastIndex(url, "/")+1:]
		last := i == len(filters)-1
		switch {
		case terminalNetworkFilters[name] && !last:
			c.fieldDiag(append(clonePath(path), "filters", indexSeg(i)), RuleListener,
				"%q is a terminal filter and must be the last of its filter chain, which Envoy enforces: filters after it never run", f.GetName())
		case nonTerminalNetworkFilters[name] && last:
			c.fieldDiag(append(clonePath(path), "filters", indexSeg(i)), RuleListener,
				"%q is not a terminal filter and is the last of its filter chain, which Envoy refuses: end the chain with a terminal filter such as tcp_proxy or http_connection_manager", f.GetName())
		}
	}
}

// filterChainMatches reports two filter chains of a listener with the
// same filter_chain_match, which Envoy refuses ("multiple filter chains
// with the same matching rules are defined").
func (c *checker) filterChainMatches(path []string, l *listenerv3.Listener) {
	if l.GetFilterChainMatcher() != nil {
		return // chains are chosen by the matcher, by name
	}
	seen := map[string]int{}
	for i, fc := range l.GetFilterChains() {
		var key []byte
		if m := fc.GetFilterChainMatch(); m != nil {
			var err error
			if key, err = deterministic.Marshal(m); err != nil {
				continue
			}
		}
		if first, dup := seen[string(key)]; dup {
			c.fieldDiag(append(clonePath(path), "filter_chains", indexSeg(i)), RuleListener,
				"filter chain matches the same connections as filter_chains[%d] (equal filter_chain_match), which Envoy refuses", first)
			continue
		}
		seen[string(key)] = i
	}
}

// isRouter reports whether an HTTP filter is Envoy's router.
func isRouter(f *hcmv3.HttpFilter) bool {
	if tc := f.GetTypedConfig(); tc != nil {
		return tc.GetTypeUrl() == routerTypeURL
	}
	if cd := f.GetConfigDiscovery(); cd != nil {
		return slices.Contains(cd.GetTypeUrls(), routerTypeURL)
	}
	return f.GetName() == routerName
}

func (c *checker) httpFilters(path []string, filters []*hcmv3.HttpFilter) {
	if len(filters) == 0 {
		c.fieldDiag(append(clonePath(path), "http_filters"), RuleListener,
			"no HTTP filters: add %s as the last HTTP filter", routerName)
		return
	}
	for i, f := range filters {
		last := i == len(filters)-1
		switch router := isRouter(f); {
		case router && !last:
			c.fieldDiag(append(clonePath(path), "http_filters", indexSeg(i)), RuleListener,
				"the router must be the last HTTP filter: filters after it never run")
		case !router && last:
			c.fieldDiag(append(clonePath(path), "http_filters", indexSeg(i)), RuleListener,
				"the last HTTP filter is %q, not the router: add %s at the end", f.GetName(), routerName)
		}
	}
}

// uniqueDomains reports a domain that two virtual hosts of one route
// configuration both claim (Envoy compares them case-insensitively).
func (c *checker) uniqueDomains(path []string, rc *routev3.RouteConfiguration) {
	seen := map[string]string{}
	for i, vh := range rc.GetVirtualHosts() {
		for j, d := range vh.GetDomains() {
			key := strings.ToLower(d)
			if first, ok := seen[key]; ok {
				c.fieldDiag(append(clonePath(path), "virtual_hosts", indexSeg(i), "domains", indexSeg(j)), RuleRoute,
					"domain %q is already used by virtual host %q: each domain may appear once per route configuration", d, first)
				continue
			}
			seen[key] = vh.GetName()
		}
	}
}
