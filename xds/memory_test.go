package xds

import (
	"context"
	"runtime"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestStreamStateIsDroppedOnClose connects and disconnects 10 000 streams,
// each of which receives and ACKs a response, and checks that the server
// forgets them: no registered streams and a heap that does not grow.
func TestStreamStateIsDroppedOnClose(t *testing.T) {
	if testing.Short() {
		t.Skip("10 000 streams")
	}
	ts := startServer(t, Options{Observer: ObserverFunc(func(Event) {})})
	require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v1", 10, 1)))
	client := dial(t, ts.addr)
	cycle := func(i int) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		st, err := client.StreamAggregatedResources(ctx)
		require.NoError(t, err)
		pod := ""
		if i%2 == 0 {
			pod = "pod"
		}
		require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("n", pod), TypeUrl: resourcev3.ClusterType}))
		resp, err := st.Recv()
		require.NoError(t, err)
		require.NoError(t, st.Send(ack(resp)))
		require.NoError(t, st.CloseSend())
		_, err = st.Recv() // the server ends the stream after our half-close
		require.Error(t, err)
	}
	waitIdle := func() {
		require.Eventually(t, func() bool { return len(ts.Proxies("n")) == 0 }, waitFor, pollEvery)
	}
	var first, last uint64
	for i := range 10_000 {
		cycle(i)
		switch i {
		case 999:
			waitIdle()
			first = heapInUse()
		case 9_999:
			waitIdle()
			last = heapInUse()
		}
	}
	t.Logf("heap in use after 1 000 cycles: %d KiB, after 10 000: %d KiB", first/1024, last/1024)
	// A leak of the per-stream state (tracker, subscriptions, nonces: well
	// over 1 KiB a stream) would add more than 9 MiB over 9 000 cycles.
	assert.Less(t, int64(last)-int64(first), int64(2<<20))
	ts.mu.Lock()
	assert.Empty(t, ts.nodes["n"].streams)
	assert.Len(t, ts.nodes, 1)
	ts.mu.Unlock()
}
