package xds

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// A client that subscribes to ever more type URLs (each a small request)
// is stopped at the bound, over SotW and delta alike: every type costs the
// stream a subscription, a nonce record and a sort of its push order.
func TestStreamTypesBounded(t *testing.T) {
	ts := startServer(t, Options{})
	typeURL := func(i int) string { return fmt.Sprintf("type.googleapis.com/attacker.T%d", i) }

	st := sotwStreamTo(t, ts.addr)
	for i := range maxTypesPerStream {
		require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("edge", "p"), TypeUrl: typeURL(i)}))
	}
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: typeURL(maxTypesPerStream)}))
	err := refused(t, func() error { _, err := st.Recv(); return err })
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	assert.Contains(t, err.Error(), "at most 32 resource types")

	dst := deltaStreamTo(t, ts.addr)
	for i := range maxTypesPerStream + 1 {
		require.NoError(t, dst.Send(&discoveryv3.DeltaDiscoveryRequest{Node: testNode("edge", "d"), TypeUrl: typeURL(i)}))
	}
	err = refused(t, func() error { _, err := dst.Recv(); return err })
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
}

// A delta client that subscribes to new names request after request is
// stopped once they add up past the bound; one that unsubscribes what it
// subscribed stays served however long it goes on.
func TestDeltaNamesBounded(t *testing.T) {
	ts := startServer(t, Options{})
	require.NoError(t, ts.SetSnapshot("edge", clusterSnapshot(t, "v1", 1, 1)))
	batch := func(round int) []string {
		names := make([]string, 3000)
		for i := range names {
			names[i] = fmt.Sprintf("%d-%d-%s", round, i, strings.Repeat("n", 1000))
		}
		return names // about 3 MiB: under the request bound
	}

	churn := deltaStreamTo(t, ts.addr)
	require.NoError(t, churn.Send(&discoveryv3.DeltaDiscoveryRequest{Node: testNode("edge", "c"), TypeUrl: resourcev3.ClusterType}))
	recvTimeout(t, churn.Recv)
	for round := range 8 {
		names := batch(round)
		require.NoError(t, churn.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: names}))
		require.NoError(t, churn.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResourceNamesUnsubscribe: names}))
	}
	require.NoError(t, ts.SetSnapshot("edge", clusterSnapshot(t, "v2", 1, 2)))
	// Each subscription was answered (with the names it lacks as
	// removed); the new cluster version follows them.
	for {
		resp := recvTimeout(t, churn.Recv)
		if resp.GetTypeUrl() == resourcev3.ClusterType {
			require.Len(t, resp.GetResources(), 1, "the churning stream is still served")
			break
		}
	}

	grow := deltaStreamTo(t, ts.addr)
	require.NoError(t, grow.Send(&discoveryv3.DeltaDiscoveryRequest{Node: testNode("edge", "g"), TypeUrl: resourcev3.ClusterType}))
	recvTimeout(t, grow.Recv)
	for round := range 6 {
		if err := grow.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: batch(round)}); err != nil {
			break // the server ended the stream
		}
	}
	err := refused(t, func() error {
		for {
			if _, err := grow.Recv(); err != nil {
				return err
			}
		}
	})
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Contains(t, err.Error(), "more than 16777216 bytes of resource names")
}

// Proxies that stop reading hold a push worker each only until the send
// timeout ends their streams: with every worker taken by such streams, a
// healthy proxy of another node still gets its next version.
func TestStalledProxiesDoNotHoldThePushers(t *testing.T) {
	setVar(t, &sendTimeout, 200*time.Millisecond)
	setVar(t, &slowPush, time.Hour) // only the send timeout frees them
	ts, healthy := stalledFleet(t, 2)
	require.NoError(t, ts.SetSnapshot("big", clusterSnapshot(t, "v2", 3000, 2)))
	require.NoError(t, ts.SetSnapshot("small", clusterSnapshot(t, "v2", 1, 2)))
	assert.Equal(t, "v2", recvTimeout(t, healthy.Recv).GetVersionInfo())
	require.Eventually(t, func() bool { return ts.Streams() == 1 }, waitFor, pollEvery, "the stalled streams are ended")
}

// However many proxies stop reading, the pushes of everybody else do not
// wait for their send timeout: a push that waits gives its worker's place
// to a new one.
func TestManyStalledProxiesDoNotDelayOthers(t *testing.T) {
	setVar(t, &sendTimeout, time.Hour) // only the hand-over frees the queue
	setVar(t, &slowPush, 50*time.Millisecond)
	ts, healthy := stalledFleet(t, 6)
	require.NoError(t, ts.SetSnapshot("big", clusterSnapshot(t, "v2", 3000, 2)))
	require.NoError(t, ts.SetSnapshot("small", clusterSnapshot(t, "v2", 1, 2)))
	assert.Equal(t, "v2", recvTimeout(t, healthy.Recv).GetVersionInfo())
	ts.pushes.mu.Lock()
	defer ts.pushes.mu.Unlock()
	assert.LessOrEqual(t, ts.pushes.peak, 2, "the workers counted never exceed the limit")
}

func setVar[T any](t *testing.T, v *T, to T) {
	old := *v
	*v = to
	t.Cleanup(func() { *v = old })
}

// stalledFleet starts a server of two push workers with a healthy proxy of
// node small (ACKed v1) and n proxies of node big that never read (v1 of
// big is far over their window and the stream's write quota).
func stalledFleet(t *testing.T, n int) (*testServer, discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient) {
	t.Helper()
	ts := startServer(t, Options{})
	ts.pushes.mu.Lock()
	ts.pushes.limit = 2
	ts.pushes.mu.Unlock()
	require.NoError(t, ts.SetSnapshot("big", clusterSnapshot(t, "v1", 3000, 1)))
	require.NoError(t, ts.SetSnapshot("small", clusterSnapshot(t, "v1", 1, 1)))

	healthy := sotwStreamTo(t, ts.addr)
	require.NoError(t, healthy.Send(&discoveryv3.DiscoveryRequest{Node: testNode("small", "ok"), TypeUrl: resourcev3.ClusterType}))
	require.NoError(t, healthy.Send(ack(recvTimeout(t, healthy.Recv))))

	for i := range n {
		// A fixed window that only reading would open again.
		cc, err := grpc.NewClient(ts.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
		require.NoError(t, err)
		t.Cleanup(func() { _ = cc.Close() })
		st, err := discoveryv3.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(context.Background())
		require.NoError(t, err)
		// and never read
		require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("big", fmt.Sprintf("stalled-%d", i)), TypeUrl: resourcev3.ClusterType}))
	}
	require.Eventually(t, func() bool { return ts.Streams() == n+1 }, waitFor, pollEvery)
	return ts, healthy
}
