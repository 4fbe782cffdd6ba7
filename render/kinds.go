package render

import (
	"fmt"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	runtimev3 "github.com/envoyproxy/go-control-plane/envoy/service/runtime/v3"
	"google.golang.org/protobuf/proto"

	// Register every Envoy, contrib and xds type for typed_config.
	_ "github.com/legate-dev/legate/render/internal/extensions"
)

// The xDS type URLs of the resources legate renders.
const (
	ListenerType        = "type.googleapis.com/envoy.config.listener.v3.Listener"
	RouteType           = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	ScopedRouteType     = "type.googleapis.com/envoy.config.route.v3.ScopedRouteConfiguration"
	VirtualHostType     = "type.googleapis.com/envoy.config.route.v3.VirtualHost"
	ClusterType         = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	EndpointType        = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	SecretType          = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"
	RuntimeType         = "type.googleapis.com/envoy.service.runtime.v3.Runtime"
	ExtensionConfigType = "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig"

	discoveryResponseType = "type.googleapis.com/envoy.service.discovery.v3.DiscoveryResponse"
	bootstrapType         = "type.googleapis.com/envoy.config.bootstrap.v3.Bootstrap"
)

// kind describes one resource type.
type kind struct {
	url   string
	label string // used in diagnostics: `route "main"`
	new   func() proto.Message
	name  func(proto.Message) string
}

var kinds = []kind{
	{
		ListenerType, "listener", func() proto.Message { return &listenerv3.Listener{} },
		func(m proto.Message) string { return m.(*listenerv3.Listener).GetName() },
	},
	{
		RouteType, "route", func() proto.Message { return &routev3.RouteConfiguration{} },
		func(m proto.Message) string { return m.(*routev3.RouteConfiguration).GetName() },
	},
	{
		ScopedRouteType, "scoped route", func() proto.Message { return &routev3.ScopedRouteConfiguration{} },
		func(m proto.Message) string { return m.(*routev3.ScopedRouteConfiguration).GetName() },
	},
	{
		VirtualHostType, "virtual host", func() proto.Message { return &routev3.VirtualHost{} },
		func(m proto.Message) string { return m.(*routev3.VirtualHost).GetName() },
	},
	{
		ClusterType, "cluster", func() proto.Message { return &clusterv3.Cluster{} },
		func(m proto.Message) string { return m.(*clusterv3.Cluster).GetName() },
	},
	{
		EndpointType, "endpoint", func() proto.Message { return &endpointv3.ClusterLoadAssignment{} },
		func(m proto.Message) string { return m.(*endpointv3.ClusterLoadAssignment).GetClusterName() },
	},
	{
		SecretType, "secret", func() proto.Message { return &tlsv3.Secret{} },
		func(m proto.Message) string { return m.(*tlsv3.Secret).GetName() },
	},
	{
		RuntimeType, "runtime", func() proto.Message { return &runtimev3.Runtime{} },
		func(m proto.Message) string { return m.(*runtimev3.Runtime).GetName() },
	},
	{
		ExtensionConfigType, "extension config", func() proto.Message { return &corev3.TypedExtensionConfig{} },
		func(m proto.Message) string { return m.(*corev3.TypedExtensionConfig).GetName() },
	},
}

var kindByURL = func() map[string]*kind {
	m := make(map[string]*kind, len(kinds))
	for i := range kinds {
		m[kinds[i].url] = &kinds[i]
	}
	return m
}()

// marin3rTypes maps MARIN3R's resource type names to type URLs.
var marin3rTypes = map[string]string{
	"listener":        ListenerType,
	"route":           RouteType,
	"scopedRoute":     ScopedRouteType,
	"virtualHost":     VirtualHostType,
	"cluster":         ClusterType,
	"endpoint":        EndpointType,
	"secret":          SecretType,
	"runtime":         RuntimeType,
	"extensionConfig": ExtensionConfigType,
}

// marin3rLists maps the lists of MARIN3R's older spec.envoyResources form to
// type URLs (secrets are handled apart).
var marin3rLists = []struct{ key, url string }{
	{"endpoints", EndpointType},
	{"clusters", ClusterType},
	{"routes", RouteType},
	{"scopedRoutes", ScopedRouteType},
	{"listeners", ListenerType},
	{"runtimes", RuntimeType},
	{"extensionConfigs", ExtensionConfigType},
}

// typeLabel is the short name of a type URL used in messages.
func typeLabel(url string) string {
	if k, ok := kindByURL[url]; ok {
		return k.label
	}
	return url
}

// Decode returns the resource message of a rendered resource body: the
// inverse of the canonical serialization in Resource.Body.
func Decode(typeURL string, body []byte) (proto.Message, error) {
	k, ok := kindByURL[typeURL]
	if !ok {
		return nil, fmt.Errorf("decode: %q is not an xDS resource type legate renders", typeURL)
	}
	m := k.new()
	if err := proto.Unmarshal(body, m); err != nil {
		return nil, fmt.Errorf("decode %s: %w", k.label, err)
	}
	return m, nil
}

// TypeURLs lists the resource types legate renders, in a fixed order.
func TypeURLs() []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = k.url
	}
	return out
}
