package xds

import (
	"strings"
	"testing"
	"unicode/utf8"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A stream that copies a real proxy's pod name (it is client-chosen
// metadata, shown on the open status API) must not answer for that proxy:
// its NACK is reported under a key of its own.
func TestCopiedPodNameDoesNotAnswerForTheRealProxy(t *testing.T) {
	ts := startServer(t, Options{})
	require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v1", 1, 1)))

	real := sotwStreamTo(t, ts.addr)
	require.NoError(t, real.Send(&discoveryv3.DiscoveryRequest{Node: testNode("n", "edge-7f9"), TypeUrl: resourcev3.ClusterType}))
	r1 := recvTimeout(t, real.Recv)
	require.NoError(t, real.Send(ack(r1)))
	require.Eventually(t, func() bool { return len(ts.rec.find(isKind(ACK))) == 1 }, waitFor, pollEvery)

	attacker := sotwStreamTo(t, ts.addr)
	require.NoError(t, attacker.Send(&discoveryv3.DiscoveryRequest{Node: testNode("n", "edge-7f9"), TypeUrl: resourcev3.ClusterType}))
	r2 := recvTimeout(t, attacker.Recv)
	require.NoError(t, attacker.Send(&discoveryv3.DiscoveryRequest{
		TypeUrl: resourcev3.ClusterType, ResponseNonce: r2.GetNonce(),
		ErrorDetail: &statuspb.Status{Code: int32(codes.InvalidArgument), Message: "forged"},
	}))
	require.Eventually(t, func() bool { return len(ts.rec.find(isKind(NACK))) == 1 }, waitFor, pollEvery)

	acked, nacked := ts.rec.find(isKind(ACK))[0], ts.rec.find(isKind(NACK))[0]
	assert.Equal(t, "edge-7f9", acked.Proxy, "the first stream keeps its name")
	assert.NotEqual(t, acked.Proxy, nacked.Proxy, "the copy is told apart")
	assert.True(t, strings.HasPrefix(nacked.Proxy, "edge-7f9#"), nacked.Proxy)
	assert.Len(t, ts.Proxies("n"), 2)
}

func TestNACKTextIsBounded(t *testing.T) {
	ts := startServer(t, Options{})
	require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v1", 1, 1)))
	st := sotwStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("n", "p"), TypeUrl: resourcev3.ClusterType}))
	r1 := recvTimeout(t, st.Recv)
	huge := strings.Repeat("é", 1<<20) + "tail" // 2 MiB of two-byte runes
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{
		TypeUrl: resourcev3.ClusterType, ResponseNonce: r1.GetNonce(),
		ErrorDetail: &statuspb.Status{Code: int32(codes.InvalidArgument), Message: huge},
	}))
	require.Eventually(t, func() bool { return len(ts.rec.find(isKind(NACK))) == 1 }, waitFor, pollEvery)
	got := ts.rec.find(isKind(NACK))[0].Error
	assert.LessOrEqual(t, len(got), MaxNACKText+len(nackTrimMarker))
	assert.True(t, strings.HasSuffix(got, nackTrimMarker))
	assert.True(t, utf8.ValidString(got), "cut on a rune boundary")
	status := ts.Proxies("n")
	require.Len(t, status, 1)
	require.Len(t, status[0].Types, 1)
	require.NotNil(t, status[0].Types[0].LastNACK)
	assert.LessOrEqual(t, len(status[0].Types[0].LastNACK.Error), MaxNACKText+len(nackTrimMarker))
}

// A proxy's NACK text may quote what it refused: credentials in it never
// reach the events, statuses and logs made of it.
func TestNACKTextIsRedacted(t *testing.T) {
	ts := startServer(t, Options{})
	require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v1", 1, 1)))
	st := sotwStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("n", "p"), TypeUrl: resourcev3.ClusterType}))
	r1 := recvTimeout(t, st.Recv)
	text := "header value 'Bearer hunter2hunter2' refused; upstream https://bob:hunter3pw@api.example/x; -----BEGIN PRIVATE KEY-----\nMIIEhunter4\n-----END PRIVATE KEY-----"
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{
		TypeUrl: resourcev3.ClusterType, ResponseNonce: r1.GetNonce(),
		ErrorDetail: &statuspb.Status{Code: int32(codes.InvalidArgument), Message: text},
	}))
	require.Eventually(t, func() bool { return len(ts.rec.find(isKind(NACK))) == 1 }, waitFor, pollEvery)
	got := ts.rec.find(isKind(NACK))[0].Error
	for _, secret := range []string{"hunter2hunter2", "hunter3pw", "hunter4"} {
		assert.NotContains(t, got, secret)
	}
	assert.Contains(t, got, "header value 'Bearer [redacted]' refused; upstream https://[redacted]@api.example/x", "the rest of the text stays")
	status := ts.Proxies("n")
	require.Len(t, status, 1)
	require.NotNil(t, status[0].Types[0].LastNACK)
	assert.Equal(t, got, status[0].Types[0].LastNACK.Error)
}

func TestStreamsPerNodeAreBounded(t *testing.T) {
	ts := startServer(t, Options{MaxStreamsPerNode: 2})
	require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v1", 1, 1)))
	for range 2 {
		st := sotwStreamTo(t, ts.addr)
		require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("n", ""), TypeUrl: resourcev3.ClusterType}))
		recvTimeout(t, st.Recv)
	}
	third := sotwStreamTo(t, ts.addr)
	require.NoError(t, third.Send(&discoveryv3.DiscoveryRequest{Node: testNode("n", ""), TypeUrl: resourcev3.ClusterType}))
	_, err := third.Recv()
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	assert.Len(t, ts.Proxies("n"), 2)
}

// A stream for a node ID that has no configuration must not leave a metric
// series behind: node IDs are client-chosen, so every one ever seen would
// stay forever.
func TestNodeWithoutConfigurationLeavesNoMetricSeries(t *testing.T) {
	ts := startServer(t, Options{})
	st := sotwStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("ghost-1", ""), TypeUrl: resourcev3.ClusterType}))
	require.Eventually(t, func() bool { return testutil.CollectAndCount(ts.metrics.connected) == 1 }, waitFor, pollEvery)
	require.NoError(t, st.CloseSend())
	_, err := st.Recv() // the server ends the stream when the client is done
	require.Error(t, err)
	require.Eventually(t, func() bool { return len(ts.Proxies("ghost-1")) == 0 }, waitFor, pollEvery)
	assert.Zero(t, testutil.CollectAndCount(ts.metrics.connected), "no series for the ghost node")
}
