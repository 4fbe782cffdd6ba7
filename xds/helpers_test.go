package xds

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/legate-dev/legate/render"
)

const (
	waitFor   = 10 * time.Second
	pollEvery = 5 * time.Millisecond
)

// recorder is an Observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) ObserveProxy(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// find returns the events matching f.
func (r *recorder) find(f func(Event) bool) []Event {
	var out []Event
	for _, ev := range r.all() {
		if f(ev) {
			out = append(out, ev)
		}
	}
	return out
}

type testServer struct {
	*Server
	addr string
	rec  *recorder
	reg  *prometheus.Registry
}

func startServer(t *testing.T, opts Options) *testServer {
	t.Helper()
	rec := &recorder{}
	reg := prometheus.NewRegistry()
	if opts.Observer == nil {
		opts.Observer = rec
	}
	opts.Registerer = reg
	s, err := New(opts)
	require.NoError(t, err)
	gs := testTransport(s)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// Through the bound listener, as both homes serve (core.ListenXDS).
	lis = s.BoundListener(lis)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return &testServer{Server: s, addr: lis.Addr().String(), rec: rec, reg: reg}
}

// serving is either transport's server: grpc-go's or the lean one.
type serving interface {
	Serve(net.Listener) error
	Stop()
}

// testTransport is what startServer serves through: the lean transport,
// as both homes do, or grpc-go's server with
// LEGATE_XDS_TEST_TRANSPORT=grpc. make test's race pass runs the package
// the first way and its plain pass the second, so that every test here
// runs once on each transport (Makefile, test-plain).
func testTransport(s *Server) serving {
	if os.Getenv("LEGATE_XDS_TEST_TRANSPORT") == "grpc" {
		return s.NewGRPCServer()
	}
	return s.NewTransport(nil)
}

func dial(t *testing.T, addr string) discoveryv3.AggregatedDiscoveryServiceClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return discoveryv3.NewAggregatedDiscoveryServiceClient(cc)
}

func sotwStreamTo(t *testing.T, addr string) discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, err := dial(t, addr).StreamAggregatedResources(ctx)
	require.NoError(t, err)
	return st
}

func deltaStreamTo(t *testing.T, addr string) discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, err := dial(t, addr).DeltaAggregatedResources(ctx)
	require.NoError(t, err)
	return st
}

func testNode(id, pod string) *corev3.Node {
	n := &corev3.Node{Id: id}
	if pod != "" {
		n.Metadata = &structpb.Struct{Fields: map[string]*structpb.Value{podNameKey: structpb.NewStringValue(pod)}}
	}
	return n
}

// recvTimeout receives one message or fails after waitFor.
func recvTimeout[T any](t *testing.T, recv func() (T, error)) T {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := recv()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		require.NoError(t, r.err)
		return r.v
	case <-time.After(waitFor):
		require.FailNow(t, "no response within the deadline")
	}
	var zero T
	return zero
}

func encode(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	require.NoError(t, err)
	return b
}

func resource(t testing.TB, name string, m proto.Message) render.Resource {
	return render.Resource{Name: name, Body: encode(t, m)}
}

// edsCluster is a cluster whose endpoints come over ADS.
func edsCluster(name string) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{
			EdsConfig: &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}},
		},
		ConnectTimeout: durationpb.New(time.Second),
	}
}

func assignment(name, host string, port uint32) *endpointv3.ClusterLoadAssignment {
	return &endpointv3.ClusterLoadAssignment{
		ClusterName: name,
		Endpoints: []*endpointv3.LocalityLbEndpoints{{
			Locality:            &corev3.Locality{Region: "local"},
			LoadBalancingWeight: wrapperspb.UInt32(1),
			LbEndpoints: []*endpointv3.LbEndpoint{{
				HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
					Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
						Address: host, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
					}}},
				}},
			}},
		}},
	}
}

// apiListener is a gRPC client listener that loads routeName over RDS.
func apiListener(t testing.TB, name, routeName string) *listenerv3.Listener {
	router, err := anypb.New(&routerv3.Router{})
	require.NoError(t, err)
	hcm, err := anypb.New(&hcmv3.HttpConnectionManager{
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			RouteConfigName: routeName,
			ConfigSource:    &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}},
		}},
		HttpFilters: []*hcmv3.HttpFilter{{Name: "router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router}}},
	})
	require.NoError(t, err)
	return &listenerv3.Listener{Name: name, ApiListener: &listenerv3.ApiListener{ApiListener: hcm}}
}

func routeTo(name, host, cluster string) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{
		Name: name,
		VirtualHosts: []*routev3.VirtualHost{{
			Name: "all", Domains: []string{host},
			Routes: []*routev3.Route{{
				Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
				Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster}}},
			}},
		}},
	}
}

// clusters returns n EDS-less clusters (STRICT_DNS) whose content depends
// on gen, plus nothing else.
func clusters(t testing.TB, n, gen int) []render.Resource {
	out := make([]render.Resource, n)
	for i := range out {
		name := fmt.Sprintf("cluster-%04d", i)
		c := &clusterv3.Cluster{
			Name:                 name,
			ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS},
			ConnectTimeout:       durationpb.New(time.Duration(gen+1) * time.Second),
			LoadAssignment:       assignment(name, "backend.example", 8080),
		}
		out[i] = resource(t, name, c)
	}
	return out
}

func clusterSnapshot(t testing.TB, version string, n, gen int) Snapshot {
	return Snapshot{Version: version, Types: map[string]TypeSnapshot{
		resourcev3.ClusterType: {Version: version, Resources: clusters(t, n, gen)},
	}}
}

func ack(resp *discoveryv3.DiscoveryResponse, names ...string) *discoveryv3.DiscoveryRequest {
	return &discoveryv3.DiscoveryRequest{
		TypeUrl: resp.GetTypeUrl(), VersionInfo: resp.GetVersionInfo(), ResponseNonce: resp.GetNonce(), ResourceNames: names,
	}
}
