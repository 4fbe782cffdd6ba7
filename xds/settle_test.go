package xds

import (
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"

	"github.com/legate-dev/legate/render"
)

// twoTypes is a snapshot with clusters in version cds and one listener in
// version lds; a proxy subscribing to clusters only does not care about lds.
func twoTypes(t *testing.T, version, cds string, clusterGen int, lds string) Snapshot {
	return Snapshot{Version: version, Types: map[string]TypeSnapshot{
		resourcev3.ClusterType:  {Version: cds, Resources: clusters(t, 1, clusterGen)},
		resourcev3.ListenerType: {Version: lds, Resources: []render.Resource{resource(t, "l-"+lds, &listenerv3.Listener{Name: "l-" + lds})}},
	}}
}

// current finds the events that report a proxy current with a snapshot
// without a response: an ACK that names no type.
func current(version string) func(Event) bool {
	return func(ev Event) bool { return ev.Kind == ACK && ev.TypeURL == "" && ev.SnapshotVersion == version }
}

func TestSotWReportsProxyCurrentWhenNothingItSubscribesChanged(t *testing.T) {
	ts := startServer(t, Options{})
	require.NoError(t, ts.SetSnapshot("n", twoTypes(t, "s1", "c1", 1, "l1")))
	st := sotwStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("n", "pod-1"), TypeUrl: resourcev3.ClusterType}))
	r1 := recvTimeout(t, st.Recv)
	require.NoError(t, st.Send(ack(r1)))
	require.Eventually(t, func() bool { return len(ts.rec.find(isKind(ACK))) == 1 }, waitFor, pollEvery)
	assert.Empty(t, ts.rec.find(current("s1")), "a response was sent for s1: its real answer counts")

	// s2 changes listeners only: nothing is sent, the proxy is current.
	require.NoError(t, ts.SetSnapshot("n", twoTypes(t, "s2", "c1", 1, "l2")))
	require.Eventually(t, func() bool { return len(ts.rec.find(current("s2"))) == 1 }, waitFor, pollEvery)
	ev := ts.rec.find(current("s2"))[0]
	assert.Equal(t, Event{Kind: ACK, Node: "n", Proxy: "pod-1", SnapshotVersion: "s2", Time: ev.Time}, ev)

	// s3 changes clusters; before the proxy answers, s4 changes listeners
	// only. s4 is not reported until the s3 response is answered.
	require.NoError(t, ts.SetSnapshot("n", twoTypes(t, "s3", "c2", 2, "l2")))
	r3 := recvTimeout(t, st.Recv)
	require.Equal(t, "c2", r3.GetVersionInfo())
	require.NoError(t, ts.SetSnapshot("n", twoTypes(t, "s4", "c2", 2, "l3")))
	require.Eventually(t, func() bool {
		ps := ts.Proxies("n")
		return len(ps) == 1 && ps[0].Compared == "s4"
	}, waitFor, pollEvery, "the stream looked at s4")
	assert.Equal(t, 1, ts.Proxies("n")[0].Outstanding)
	assert.Empty(t, ts.rec.find(current("s4")), "an answer is still due")
	require.NoError(t, st.Send(ack(r3)))
	require.Eventually(t, func() bool { return len(ts.rec.find(current("s4"))) == 1 }, waitFor, pollEvery)
	assert.Empty(t, ts.rec.find(current("s3")))

	assert.InDelta(t, 2, testutil.ToFloat64(ts.metrics.responses.WithLabelValues(shortType(resourcev3.ClusterType))), 0)
	assert.InDelta(t, 0, testutil.ToFloat64(ts.metrics.responses.WithLabelValues(shortType(resourcev3.ListenerType))), 0)
	assert.InDelta(t, 2, testutil.ToFloat64(ts.metrics.acks.WithLabelValues(shortType(resourcev3.ClusterType))), 0,
		"reports without a response are not counted as ACKs on the wire")
}

func TestDeltaReportsProxyCurrentWhenNothingItSubscribesChanged(t *testing.T) {
	ts := startServer(t, Options{})
	require.NoError(t, ts.SetSnapshot("n", twoTypes(t, "s1", "c1", 1, "l1")))
	st := deltaStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DeltaDiscoveryRequest{Node: testNode("n", "pod-d"), TypeUrl: resourcev3.ClusterType}))
	r1 := recvTimeout(t, st.Recv)
	require.NoError(t, st.Send(deltaACK(r1)))
	require.Eventually(t, func() bool { return len(ts.rec.find(isKind(ACK))) == 1 }, waitFor, pollEvery)

	require.NoError(t, ts.SetSnapshot("n", twoTypes(t, "s2", "c1", 1, "l2")))
	require.Eventually(t, func() bool { return len(ts.rec.find(current("s2"))) == 1 }, waitFor, pollEvery)
	ev := ts.rec.find(current("s2"))[0]
	assert.Equal(t, "pod-d", ev.Proxy)
	assert.Equal(t, 0, ev.Outstanding)
}

func TestSotWReportsRejectedContentKeptByANewSnapshot(t *testing.T) {
	ts := startServer(t, Options{})
	require.NoError(t, ts.SetSnapshot("n", twoTypes(t, "s1", "c1", 1, "l1")))
	st := sotwStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("n", "pod-1"), TypeUrl: resourcev3.ClusterType}))
	r1 := recvTimeout(t, st.Recv)
	require.NoError(t, st.Send(nackOf(r1, "cluster-0000: no")))
	require.Eventually(t, func() bool { return len(ts.rec.find(isKind(NACK))) == 1 }, waitFor, pollEvery)

	// s2 keeps the rejected clusters: nothing is sent, and the proxy is
	// reported as rejecting s2 with its own words.
	require.NoError(t, ts.SetSnapshot("n", twoTypes(t, "s2", "c1", 1, "l2")))
	require.Eventually(t, func() bool { return len(ts.rec.find(isKind(NACK))) == 2 }, waitFor, pollEvery)
	ev := ts.rec.find(isKind(NACK))[1]
	assert.Equal(t, Event{
		Kind: NACK, Node: "n", Proxy: "pod-1", TypeURL: resourcev3.ClusterType, TypeVersion: "c1",
		SnapshotVersion: "s2", Error: "cluster-0000: no", Time: ev.Time,
	}, ev)
	assert.Empty(t, ts.rec.find(current("s2")))
	assert.InDelta(t, 1, testutil.ToFloat64(ts.metrics.responses.WithLabelValues(shortType(resourcev3.ClusterType))), 0)
}

func nackOf(resp *discoveryv3.DiscoveryResponse, msg string) *discoveryv3.DiscoveryRequest {
	req := ack(resp)
	req.VersionInfo = ""
	req.ErrorDetail = statusOf(msg)
	return req
}

func statusOf(msg string) *statuspb.Status {
	return &statuspb.Status{Code: int32(codes.InvalidArgument), Message: msg}
}
