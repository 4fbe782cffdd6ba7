package xds

import (
	"context"
	"runtime"
	"strings"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// withoutStreamEnder runs the test's streams as where the transport
// cannot end a stream from outside its handler: with a receiver goroutine.
func withoutStreamEnder(t *testing.T) {
	t.Helper()
	newStreamEnder = func(context.Context) func(error) { return nil }
	t.Cleanup(func() { newStreamEnder = streamEnder })
}

// goroutinesIn counts the goroutines whose stack has a frame of fn.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			count++
		}
	}
	return count
}

// openACKed opens n state-of-the-world streams of node, each ACKing the
// response to its first request, and waits until the server has every ACK.
func openACKed(t *testing.T, ts *testServer, node string, n int) []discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient {
	t.Helper()
	var out []discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	for i := range n {
		st := sotwStreamTo(t, ts.addr)
		require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode(node, "pod-"+string(rune('a'+i%26))), TypeUrl: resourcev3.ClusterType}))
		require.NoError(t, st.Send(ack(recvTimeout(t, st.Recv))))
		out = append(out, st)
	}
	require.Eventually(t, func() bool {
		for _, p := range ts.Proxies(node) {
			if p.Outstanding != 0 {
				return false
			}
		}
		return len(ts.Proxies(node)) == n
	}, waitFor, pollEvery)
	return out
}

// A stream runs on gRPC's handler goroutine alone: no receiver, and no
// goroutine waiting for pushes. With 10 000 proxies each goroutine more is
// 40 MiB of stacks.
func TestStreamCostsOneGoroutine(t *testing.T) {
	const streams = 20
	t.Run("ended from a push worker", func(t *testing.T) {
		ts := startServer(t, Options{})
		require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v1", 2, 1)))
		openACKed(t, ts, "n", streams)
		assert.Equal(t, streams, goroutinesIn("xds.serveStream["))
		assert.Zero(t, goroutinesIn("xds.receive["), "receiver goroutines")
		assert.Zero(t, goroutinesIn("xds.(*pushQueue).run"), "push workers of an idle server")
	})
	t.Run("fallback", func(t *testing.T) {
		withoutStreamEnder(t)
		ts := startServer(t, Options{})
		require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v1", 2, 1)))
		openACKed(t, ts, "n", streams)
		assert.Equal(t, streams, goroutinesIn("xds.receive["), "receiver goroutines")
	})
}

// Without a transport that can end a stream from a push worker, a push
// still ends a stream that lost its right with PermissionDenied while no
// request is pending (the receiver goroutine's fallback).
func TestPushEndsStreamInFallback(t *testing.T) {
	withoutStreamEnder(t)
	TestPushRechecksTheStreamsRight(t)
	TestReauthorizeClosesStreamsThatLostTheirRight(t)
}

// A push to many streams runs on at most the queue's limit of goroutines,
// reaches every stream, and leaves no goroutine behind.
func TestPushersAreBounded(t *testing.T) {
	const streams = 40
	ts := startServer(t, Options{})
	ts.pushes.mu.Lock()
	ts.pushes.limit = 3
	ts.pushes.mu.Unlock()
	require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v1", 2, 1)))
	sts := openACKed(t, ts, "n", streams)

	require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v2", 2, 1)))
	for _, st := range sts {
		assert.Equal(t, "v2", recvTimeout(t, st.Recv).GetVersionInfo())
	}
	require.Eventually(t, func() bool {
		ts.pushes.mu.Lock()
		defer ts.pushes.mu.Unlock()
		return ts.pushes.pushers == 0 && len(ts.pushes.streams) == 0
	}, waitFor, pollEvery)
	ts.pushes.mu.Lock()
	peak := ts.pushes.peak
	ts.pushes.mu.Unlock()
	assert.Positive(t, peak)
	assert.LessOrEqual(t, peak, 3)
}

// A push that fails ends the stream with the push's status, and the
// handler returns it: what a client sees is the status, not a cancellation.
func TestEndedStreamReportsThePushStatus(t *testing.T) {
	o := &owners{allowed: map[string]bool{"team-a": true}}
	ts := startServer(t, Options{Recheck: o.check})
	require.NoError(t, ts.SetSnapshot("edge", owned(t, "v1", "team-a")))
	st := sotwStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("edge", "p1"), TypeUrl: resourcev3.ClusterType}))
	require.NoError(t, st.Send(ack(recvTimeout(t, st.Recv))))
	o.set("team-a", false)
	require.NoError(t, ts.SetSnapshot("edge", owned(t, "v2", "team-a")))
	err := refused(t, func() error { _, err := st.Recv(); return err })
	assert.Equal(t, codes.PermissionDenied, status.Code(err), "got %v", err)
	assert.Contains(t, status.Convert(err).Message(), `node "edge" is not served to this proxy any more`)
	require.Eventually(t, func() bool { return ts.Streams() == 0 }, waitFor, pollEvery)
}
