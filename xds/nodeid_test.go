package xds

import (
	"strings"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/legate-dev/legate/render"
)

// A node.id over the bound is refused at stream start with
// InvalidArgument, over SotW and delta alike: it registers nothing and
// makes no metric series. One at the bound is served, its label whole.
func TestNodeIDOverTheBoundIsRefused(t *testing.T) {
	ts := startServer(t, Options{})
	long := strings.Repeat("n", 1<<20)

	st := sotwStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode(long, "p"), TypeUrl: resourcev3.ClusterType}))
	err := refused(t, func() error { _, err := st.Recv(); return err })
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	assert.Contains(t, err.Error(), "node.id is 1048576 bytes, over the limit of 253")

	dst := deltaStreamTo(t, ts.addr)
	require.NoError(t, dst.Send(&discoveryv3.DeltaDiscoveryRequest{Node: testNode(strings.Repeat("d", render.MaxNodeIDLength+1), "p"), TypeUrl: resourcev3.ClusterType}))
	err = refused(t, func() error { _, err := dst.Recv(); return err })
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	assert.Empty(t, ts.rec.find(isKind(Connected)))
	assert.Zero(t, testutil.CollectAndCount(ts.metrics.connected))

	atBound := strings.Repeat("a", render.MaxNodeIDLength)
	require.NoError(t, ts.SetSnapshot(atBound, clusterSnapshot(t, "v1", 1, 1)))
	ok := sotwStreamTo(t, ts.addr)
	require.NoError(t, ok.Send(&discoveryv3.DiscoveryRequest{Node: testNode(atBound, "p"), TypeUrl: resourcev3.ClusterType}))
	recvTimeout(t, ok.Recv)
	assert.InDelta(t, 1, testutil.ToFloat64(ts.metrics.connected.WithLabelValues(atBound)), 0)
}

// refused waits for recv's error: an admitted stream would wait for a
// snapshot for ever.
func refused(t *testing.T, recv func() error) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- recv() }()
	select {
	case err := <-errc:
		return err
	case <-time.After(waitFor):
		t.Fatal("the stream was not refused")
		return nil
	}
}
