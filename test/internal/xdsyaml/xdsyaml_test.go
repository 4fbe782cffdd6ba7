package xdsyaml

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/legate-dev/legate/render"
)

const node = "test"

// renderYAML renders content as the file c.yaml of node "test".
func renderYAML(content string) *render.Result {
	fsys := fstest.MapFS{"c.yaml": &fstest.MapFile{Data: []byte(content)}}
	return render.Render(fsys, render.Options{DefaultNode: node})
}

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	require.NoError(t, err)
	return a
}

func ads() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
		ResourceApiVersion:    corev3.ApiVersion_V3,
	}
}

func loopback(port uint32) *endpointv3.LbEndpoint {
	return &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
		}}},
	}}}
}

func prefixRoute(name, prefix, cluster string) *routev3.Route {
	return &routev3.Route{
		Name:  name,
		Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: prefix}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster},
		}},
	}
}

// TestDocumentsRender: the documents, joined into one file, render with
// legate's renderer to exactly the resources they describe.
func TestDocumentsRender(t *testing.T) {
	content := Join(
		APIListener("greeter", "greeter-stats", "greeter-routes"),
		RouteConfiguration("greeter-routes", "greeter",
			Route{Name: "svc", Prefix: "/pkg.Svc/", Cluster: "a"},
			Route{Prefix: "", Cluster: "b"},
		),
		EDSCluster("a"),
		Endpoints("a", 8081),
		StaticCluster("b", 8082),
	)
	res := renderYAML(content)
	require.True(t, res.OK(), "%v", res.Diagnostics)
	cfg := res.Nodes[node]
	require.NotNil(t, cfg)

	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix: "greeter-stats",
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			RouteConfigName: "greeter-routes", ConfigSource: ads(),
		}},
		HttpFilters: []*hcmv3.HttpFilter{{
			Name:       "envoy.filters.http.router",
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(t, &routerv3.Router{})},
		}},
	}
	tests := []struct {
		name    string
		typeURL string
		want    proto.Message
	}{
		{"listener", resourcev3.ListenerType, &listenerv3.Listener{
			Name:        "greeter",
			ApiListener: &listenerv3.ApiListener{ApiListener: mustAny(t, hcm)},
		}},
		{"route configuration", resourcev3.RouteType, &routev3.RouteConfiguration{
			Name: "greeter-routes",
			VirtualHosts: []*routev3.VirtualHost{{
				Name:    "greeter",
				Domains: []string{"*"},
				Routes:  []*routev3.Route{prefixRoute("svc", "/pkg.Svc/", "a"), prefixRoute("", "", "b")},
			}},
		}},
		{"EDS cluster", resourcev3.ClusterType, &clusterv3.Cluster{
			Name:                 "a",
			ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
			ConnectTimeout:       durationpb.New(time.Second),
			EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{EdsConfig: ads()},
		}},
		{"STATIC cluster", resourcev3.ClusterType, &clusterv3.Cluster{
			Name:                 "b",
			ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
			ConnectTimeout:       durationpb.New(time.Second),
			LoadAssignment: &endpointv3.ClusterLoadAssignment{
				ClusterName: "b",
				Endpoints:   []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{loopback(8082)}}},
			},
		}},
		{"endpoints", resourcev3.EndpointType, &endpointv3.ClusterLoadAssignment{
			ClusterName: "a",
			Endpoints: []*endpointv3.LocalityLbEndpoints{{
				Locality:            &corev3.Locality{Region: "local"},
				LoadBalancingWeight: wrapperspb.UInt32(1),
				LbEndpoints:         []*endpointv3.LbEndpoint{loopback(8081)},
			}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := resourceName(tt.want)
			var got proto.Message
			for _, r := range cfg.Types[tt.typeURL].Resources {
				if r.Name == name {
					m, err := render.Decode(tt.typeURL, r.Body)
					require.NoError(t, err)
					got = m
				}
			}
			require.NotNil(t, got, "no %s %q rendered", tt.typeURL, name)
			assert.Empty(t, cmp.Diff(tt.want, got, protocmp.Transform()))
		})
	}
	assert.Len(t, cfg.Types, 4, "listeners, routes, clusters and endpoints only")
}

func resourceName(m proto.Message) string {
	if la, ok := m.(*endpointv3.ClusterLoadAssignment); ok {
		return la.GetClusterName()
	}
	return m.(interface{ GetName() string }).GetName()
}

// TestWithFieldIsRejected: a field the message does not have is a render
// error that names the field on the line WithField put it.
func TestWithFieldIsRejected(t *testing.T) {
	content := Join(
		APIListener("l", "l", "r"),
		RouteConfiguration("r", "v", Route{Cluster: "a"}),
		WithField(EDSCluster("a"), "bogus_field", "3"),
		Endpoints("a", 8081),
	)
	res := renderYAML(content)
	require.False(t, res.OK())
	require.NotEmpty(t, res.Diagnostics)
	line := 1 + strings.Count(content[:strings.Index(content, "bogus_field")], "\n")
	d := res.Diagnostics[0]
	assert.Contains(t, d.String(), "bogus_field")
	assert.Equal(t, "c.yaml", d.Pos.File)
	assert.Equal(t, line, d.Pos.Line)
}

// TestJoin: documents are separated, not prefixed, by "---".
func TestJoin(t *testing.T) {
	assert.Equal(t, "a: 1\n---\nb: 2\n", Join("a: 1\n", "b: 2\n"))
	assert.Equal(t, "a: 1\n", Join("a: 1\n"))
}
