package xds

import (
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
)

// Tests written for mutants that survived `make mutate` (docs/testing.md).

func TestBoundTextCutsOnARuneBoundary(t *testing.T) {
	assert.Equal(t, "abc", boundText("abc", 3, "…"), "a text at the limit is kept whole")
	assert.Equal(t, "ab…", boundText("abcd", 2, "…"))
	assert.Equal(t, "h…", boundText("héllo", 2, "…"), "é is two bytes: not split")
	assert.Equal(t, "…", boundText("\x80\x80\x80abc", 2, "…"), "no rune start before the limit: nothing kept")
}

func TestSortPushOrder(t *testing.T) {
	// "a.Extension" sorts first by name but goes after the ordered types.
	const ext = "type.googleapis.com/a.Extension"
	types := []string{resourcev3.SecretType, ext, resourcev3.RouteType, resourcev3.ListenerType, resourcev3.EndpointType, resourcev3.ClusterType, resourcev3.RuntimeType}
	sortPushOrder(types)
	assert.Equal(t, []string{
		resourcev3.ClusterType, resourcev3.EndpointType, resourcev3.ListenerType, resourcev3.RouteType,
		ext, resourcev3.SecretType, resourcev3.RuntimeType,
	}, types, "clusters before endpoints, listeners before routes, the rest by type URL")
}

func TestUndecodableClusterIsInconsistent(t *testing.T) {
	snap := Snapshot{Version: "v", Types: map[string]TypeSnapshot{
		resourcev3.ClusterType: {Version: "1", Resources: []render.Resource{{Name: "x", Body: []byte{0xff}}}},
	}}
	assert.ErrorContains(t, snap.Consistent(), `decode cluster "x"`)
}

func TestMetricsRegisterOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, err := New(Options{Registerer: reg})
	require.NoError(t, err)
	_, err = New(Options{Registerer: reg})
	assert.Error(t, err, "a second server on the same registry is refused")
}

// Proxies lists a node's streams sorted by proxy name.
func TestProxiesAreSorted(t *testing.T) {
	ts := startServer(t, Options{})
	require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v1", 1, 0)))
	for _, pod := range []string{"pod-c", "pod-a", "pod-b"} {
		st := sotwStreamTo(t, ts.addr)
		require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("n", pod), TypeUrl: resourcev3.ClusterType}))
		recvTimeout(t, st.Recv)
	}
	require.Eventually(t, func() bool { return len(ts.Proxies("n")) == 3 }, waitFor, pollEvery)
	var names []string
	for _, p := range ts.Proxies("n") {
		names = append(names, p.Proxy)
	}
	assert.Equal(t, []string{"pod-a", "pod-b", "pod-c"}, names)
}

// A delta response that only removes resources is sent too.
func TestDeltaSendsARemovalAlone(t *testing.T) {
	ts := startServer(t, Options{})
	require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v1", 2, 0)))
	st := deltaStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DeltaDiscoveryRequest{Node: testNode("n", "pod-d"), TypeUrl: resourcev3.ClusterType}))
	r1 := recvTimeout(t, st.Recv)
	require.Len(t, r1.GetResources(), 2)
	require.NoError(t, st.Send(deltaACK(r1)))

	require.NoError(t, ts.SetSnapshot("n", Snapshot{Version: "v2", Types: map[string]TypeSnapshot{
		resourcev3.ClusterType: {Version: "v2", Resources: clusters(t, 2, 0)[:1]},
	}}))
	r2 := recvTimeout(t, st.Recv)
	assert.Empty(t, r2.GetResources(), "nothing changed in what is kept")
	assert.Equal(t, []string{"cluster-0001"}, r2.GetRemovedResources())
}

// Every subscribed type of a delta stream gets the snapshot's changes.
func TestDeltaPushesEveryChangedType(t *testing.T) {
	ts := startServer(t, Options{})
	require.NoError(t, ts.SetSnapshot("n", twoTypes(t, "s1", "c1", 1, "l1")))
	st := deltaStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DeltaDiscoveryRequest{Node: testNode("n", "pod-d"), TypeUrl: resourcev3.ClusterType}))
	r := recvTimeout(t, st.Recv)
	require.NoError(t, st.Send(deltaACK(r)))
	require.NoError(t, st.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.ListenerType}))
	r = recvTimeout(t, st.Recv)
	require.Equal(t, resourcev3.ListenerType, r.GetTypeUrl())
	require.NoError(t, st.Send(deltaACK(r)))

	require.NoError(t, ts.SetSnapshot("n", twoTypes(t, "s2", "c2", 2, "l2")))
	got := map[string]bool{}
	for range 2 {
		r := recvTimeout(t, st.Recv)
		got[r.GetTypeUrl()] = true
		require.NoError(t, st.Send(deltaACK(r)))
	}
	assert.Equal(t, map[string]bool{resourcev3.ClusterType: true, resourcev3.ListenerType: true}, got)
}

// A delta stream that leaves the wildcard for one name gets only that
// name's changes from then on.
func TestDeltaLeavesTheWildcard(t *testing.T) {
	ts := startServer(t, Options{})
	require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v1", 2, 0)))
	st := deltaStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DeltaDiscoveryRequest{Node: testNode("n", "pod-d"), TypeUrl: resourcev3.ClusterType}))
	r1 := recvTimeout(t, st.Recv)
	require.Len(t, r1.GetResources(), 2, "no names: the wildcard")
	require.NoError(t, st.Send(deltaACK(r1)))
	require.NoError(t, st.Send(&discoveryv3.DeltaDiscoveryRequest{
		TypeUrl: resourcev3.ClusterType, ResourceNamesUnsubscribe: []string{"*"}, ResourceNamesSubscribe: []string{"cluster-0001"},
	}))
	r2 := recvTimeout(t, st.Recv)
	assert.Equal(t, []string{"cluster-0001"}, deltaNames(r2), "a new subscription is answered")
	require.NoError(t, st.Send(deltaACK(r2)))
	require.Eventually(t, func() bool { return len(ts.rec.find(isKind(ACK))) >= 2 }, waitFor, pollEvery)

	require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v2", 2, 1)))
	r3 := recvTimeout(t, st.Recv)
	assert.Equal(t, "v2", r3.GetSystemVersionInfo())
	assert.Equal(t, []string{"cluster-0001"}, deltaNames(r3), "cluster-0000 is no longer subscribed")
}

// A delta stream is not sent empty responses for snapshots that change
// none of its types.
func TestDeltaSendsNothingForOtherTypes(t *testing.T) {
	ts := startServer(t, Options{})
	require.NoError(t, ts.SetSnapshot("n", twoTypes(t, "s1", "c1", 1, "l1")))
	st := deltaStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DeltaDiscoveryRequest{Node: testNode("n", "pod-d"), TypeUrl: resourcev3.ClusterType}))
	r1 := recvTimeout(t, st.Recv)
	require.NoError(t, st.Send(deltaACK(r1)))
	require.NoError(t, ts.SetSnapshot("n", twoTypes(t, "s2", "c1", 1, "l2"))) // listeners only
	require.Eventually(t, func() bool {
		ps := ts.Proxies("n")
		return len(ps) == 1 && ps[0].Compared == "s2"
	}, waitFor, pollEvery, "the stream looked at s2")
	require.NoError(t, ts.SetSnapshot("n", twoTypes(t, "s3", "c3", 3, "l2"))) // clusters
	r := recvTimeout(t, st.Recv)
	assert.Equal(t, "c3", r.GetSystemVersionInfo(), "the first response after s1 is the cluster change")
	assert.Equal(t, []string{"cluster-0000"}, deltaNames(r))
}

// A state-of-the-world request that answers an older response (a stale
// nonce) does not change the subscription.
func TestSotWStaleNonceChangesNothing(t *testing.T) {
	ts := startServer(t, Options{})
	eps := func(v string, names ...string) Snapshot {
		var rs []render.Resource
		for i, n := range names {
			rs = append(rs, resource(t, n, assignment(n, "10.0.0.1", uint32(100+i))))
		}
		return Snapshot{Version: v, Types: map[string]TypeSnapshot{resourcev3.EndpointType: {Version: v, Resources: rs}}}
	}
	require.NoError(t, ts.SetSnapshot("n", eps("e1", "a", "b", "c")))
	st := sotwStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("n", ""), TypeUrl: resourcev3.EndpointType, ResourceNames: []string{"a"}}))
	r1 := recvTimeout(t, st.Recv)
	require.NoError(t, ts.SetSnapshot("n", eps("e2", "a", "b", "c")))
	r2 := recvTimeout(t, st.Recv)
	require.Equal(t, "e2", r2.GetVersionInfo())

	require.NoError(t, st.Send(ack(r1, "a", "b"))) // stale: r2 was sent since
	require.NoError(t, st.Send(ack(r2, "a", "c")))
	r3 := recvTimeout(t, st.Recv)
	assert.Equal(t, []string{"a", "c"}, assignmentNames(t, r3), "the stale request asked for b; it was ignored")
}

// A delta stream subscribed to some names is not sent an empty response
// when only other resources of the type change.
func TestDeltaSendsNothingForOtherResources(t *testing.T) {
	ts := startServer(t, Options{})
	require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v1", 2, 0)))
	st := deltaStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DeltaDiscoveryRequest{Node: testNode("n", "pod-d"), TypeUrl: resourcev3.ClusterType, ResourceNamesSubscribe: []string{"cluster-0000"}}))
	r1 := recvTimeout(t, st.Recv)
	require.Equal(t, []string{"cluster-0000"}, deltaNames(r1))
	require.NoError(t, st.Send(deltaACK(r1)))

	otherChanged := clusters(t, 2, 0)
	otherChanged[1] = clusters(t, 2, 5)[1]
	require.NoError(t, ts.SetSnapshot("n", Snapshot{Version: "v2", Types: map[string]TypeSnapshot{resourcev3.ClusterType: {Version: "v2", Resources: otherChanged}}}))
	require.Eventually(t, func() bool {
		ps := ts.Proxies("n")
		return len(ps) == 1 && ps[0].Compared == "v2"
	}, waitFor, pollEvery, "the stream looked at v2")
	require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v3", 2, 9)))
	r := recvTimeout(t, st.Recv)
	assert.Equal(t, "v3", r.GetSystemVersionInfo(), "nothing was sent for v2, which changed only cluster-0001")
	assert.Equal(t, []string{"cluster-0000"}, deltaNames(r))
}
