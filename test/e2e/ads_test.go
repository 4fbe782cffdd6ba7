package e2e

import (
	"context"
	"sync"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/require"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// subscriptions are what the raw clients ask for: listeners and clusters
// by wildcard, the route configuration and the endpoints by name, as a
// proxy that knows the configuration would.
var subscriptions = []struct {
	typeURL string
	names   []string
}{
	{resourcev3.ClusterType, nil},
	{resourcev3.EndpointType, []string{"backend-a", "backend-b"}},
	{resourcev3.ListenerType, nil},
	{resourcev3.RouteType, []string{"greeter-routes"}},
}

// judgeFunc decides a raw client's answer to the resources of a response:
// "" accepts them, anything else is the NACK's error text.
type judgeFunc func(typeURL string, resources []*anypb.Any) string

func acceptAll(string, []*anypb.Any) string { return "" }

// received is one response a raw client got.
type received struct {
	typeURL, version string
	resources        []*anypb.Any
	nacked           bool
}

// rawClient is an ADS client on a bare gRPC stream that answers every
// response with judge's verdict, over state-of-the-world or delta.
type rawClient struct {
	judge judgeFunc

	mu  sync.Mutex
	got []received
}

func (c *rawClient) record(r received) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, r)
}

// responses returns what the client received so far.
func (c *rawClient) responses() []received {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]received(nil), c.got...)
}

func rawNode(pod string) *corev3.Node {
	return &corev3.Node{Id: nodeID, Metadata: &structpb.Struct{Fields: map[string]*structpb.Value{
		"pod_name": structpb.NewStringValue(pod),
	}}}
}

func dialADS(t *testing.T, addr string) (discoveryv3.AggregatedDiscoveryServiceClient, context.Context) {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		_ = cc.Close()
	})
	return discoveryv3.NewAggregatedDiscoveryServiceClient(cc), ctx
}

// startRawSotW opens a state-of-the-world ADS stream as proxy pod.
func startRawSotW(t *testing.T, addr, pod string, judge judgeFunc) *rawClient {
	t.Helper()
	ads, ctx := dialADS(t, addr)
	st, err := ads.StreamAggregatedResources(ctx)
	require.NoError(t, err)
	names := map[string][]string{}
	for i, s := range subscriptions {
		names[s.typeURL] = s.names
		req := &discoveryv3.DiscoveryRequest{TypeUrl: s.typeURL, ResourceNames: s.names}
		if i == 0 {
			req.Node = rawNode(pod)
		}
		require.NoError(t, st.Send(req))
	}
	c := &rawClient{judge: judge}
	go func() {
		acked := map[string]string{}
		for {
			resp, err := st.Recv()
			if err != nil {
				return
			}
			url := resp.GetTypeUrl()
			verdict := c.judge(url, resp.GetResources())
			c.record(received{typeURL: url, version: resp.GetVersionInfo(), resources: resp.GetResources(), nacked: verdict != ""})
			req := &discoveryv3.DiscoveryRequest{TypeUrl: url, ResourceNames: names[url], ResponseNonce: resp.GetNonce()}
			if verdict == "" {
				acked[url] = resp.GetVersionInfo()
			} else {
				req.ErrorDetail = &statuspb.Status{Code: int32(codes.InvalidArgument), Message: verdict}
			}
			req.VersionInfo = acked[url]
			if st.Send(req) != nil {
				return
			}
		}
	}()
	return c
}

// startRawDelta opens an incremental (delta) ADS stream as proxy pod.
// grpc-go has no delta xDS and no Envoy binary can run here, so this client
// answers as Envoy documents for incremental xDS: every response is
// answered with its nonce, a rejection carries error_detail, and neither
// changes the subscriptions. Failures reach the test through recorded
// answers, never through require calls in the receiving goroutine.
func startRawDelta(t *testing.T, addr, pod string, judge judgeFunc) *rawClient {
	t.Helper()
	ads, ctx := dialADS(t, addr)
	st, err := ads.DeltaAggregatedResources(ctx)
	require.NoError(t, err)
	for i, s := range subscriptions {
		req := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: s.typeURL, ResourceNamesSubscribe: s.names}
		if i == 0 {
			req.Node = rawNode(pod)
		}
		require.NoError(t, st.Send(req))
	}
	c := &rawClient{judge: judge}
	go func() {
		for {
			resp, err := st.Recv()
			if err != nil {
				return
			}
			url := resp.GetTypeUrl()
			anys := make([]*anypb.Any, 0, len(resp.GetResources()))
			for _, r := range resp.GetResources() {
				anys = append(anys, r.GetResource())
			}
			verdict := c.judge(url, anys)
			c.record(received{typeURL: url, version: resp.GetSystemVersionInfo(), resources: anys, nacked: verdict != ""})
			req := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: url, ResponseNonce: resp.GetNonce()}
			if verdict != "" {
				req.ErrorDetail = &statuspb.Status{Code: int32(codes.InvalidArgument), Message: verdict}
			}
			if st.Send(req) != nil {
				return
			}
		}
	}()
	return c
}
