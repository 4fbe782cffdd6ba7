package xds

import (
	"sort"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/legate-dev/legate/render"
)

func deltaNames(resp *discoveryv3.DeltaDiscoveryResponse) []string {
	var names []string
	for _, r := range resp.GetResources() {
		names = append(names, r.GetName())
	}
	sort.Strings(names)
	return names
}

func deltaACK(resp *discoveryv3.DeltaDiscoveryResponse) *discoveryv3.DeltaDiscoveryRequest {
	return &discoveryv3.DeltaDiscoveryRequest{TypeUrl: resp.GetTypeUrl(), ResponseNonce: resp.GetNonce()}
}

func TestDeltaSendsOnlyChanges(t *testing.T) {
	ts := startServer(t, Options{})
	first := clusterSnapshot(t, "v1", 3, 1)
	require.NoError(t, ts.SetSnapshot("n", first))
	st := deltaStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DeltaDiscoveryRequest{Node: testNode("n", "pod-d"), TypeUrl: resourcev3.ClusterType}))
	r1 := recvTimeout(t, st.Recv)
	require.Len(t, r1.GetResources(), 3)
	got := r1.GetResources()[0]
	want := &discoveryv3.Resource{
		Name: "cluster-0000", Version: got.GetVersion(),
		Resource: &anypb.Any{TypeUrl: resourcev3.ClusterType, Value: first.Types[resourcev3.ClusterType].Resources[0].Body},
	}
	assert.Empty(t, cmp.Diff(want, got, protocmp.Transform()))
	assert.Equal(t, "v1", r1.GetSystemVersionInfo())
	require.NoError(t, st.Send(deltaACK(r1)))
	require.Eventually(t, func() bool { return len(ts.rec.find(isKind(ACK))) == 1 }, waitFor, pollEvery)

	// Change cluster-0001, drop cluster-0002, keep cluster-0000.
	next := clusters(t, 3, 1)[:2]
	next[1] = clusters(t, 2, 7)[1]
	require.NoError(t, ts.SetSnapshot("n", Snapshot{Version: "v2", Types: map[string]TypeSnapshot{
		resourcev3.ClusterType: {Version: "v2", Resources: next},
	}}))
	r2 := recvTimeout(t, st.Recv)
	assert.Equal(t, []string{"cluster-0001"}, deltaNames(r2))
	assert.Equal(t, []string{"cluster-0002"}, r2.GetRemovedResources())
	assert.NotEqual(t, r1.GetNonce(), r2.GetNonce())

	// A NACK is reported with the proxy's text, and the version not resent.
	require.NoError(t, st.Send(&discoveryv3.DeltaDiscoveryRequest{
		TypeUrl: resourcev3.ClusterType, ResponseNonce: r2.GetNonce(), ErrorDetail: &statuspb.Status{Message: "nope"},
	}))
	require.Eventually(t, func() bool { return len(ts.rec.find(isKind(NACK))) == 1 }, waitFor, pollEvery)
	ev := ts.rec.find(isKind(NACK))[0]
	assert.Equal(t, "v2", ev.SnapshotVersion)
	assert.Equal(t, "nope", ev.Error)
	assert.Equal(t, "pod-d", ev.Proxy)
	require.NoError(t, ts.SetSnapshot("n", Snapshot{Version: "s3", Types: map[string]TypeSnapshot{
		resourcev3.ClusterType: {Version: "v2", Resources: next},
	}}))
	// The rollback comes under a fresh version and carries what was rejected.
	require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v4", 2, 1)))
	r4 := recvTimeout(t, st.Recv)
	assert.Equal(t, "v4", r4.GetSystemVersionInfo())
	assert.Equal(t, []string{"cluster-0001"}, deltaNames(r4))
}

func TestDeltaInitialVersionsAndNamedSubscriptions(t *testing.T) {
	ts := startServer(t, Options{})
	require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v1", 3, 1)))
	st := deltaStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DeltaDiscoveryRequest{Node: testNode("n", ""), TypeUrl: resourcev3.ClusterType}))
	r1 := recvTimeout(t, st.Recv)
	versions := map[string]string{}
	for _, r := range r1.GetResources() {
		versions[r.GetName()] = r.GetVersion()
	}
	versions["cluster-0001"] = "stale"
	versions["gone"] = "x"

	// A reconnecting client says what it has: only the differences come.
	st2 := deltaStreamTo(t, ts.addr)
	require.NoError(t, st2.Send(&discoveryv3.DeltaDiscoveryRequest{
		Node: testNode("n", ""), TypeUrl: resourcev3.ClusterType, InitialResourceVersions: versions,
	}))
	r2 := recvTimeout(t, st2.Recv)
	assert.Equal(t, []string{"cluster-0001"}, deltaNames(r2))
	assert.Equal(t, []string{"gone"}, r2.GetRemovedResources())

	// Named subscribe and unsubscribe on an endpoint type.
	require.NoError(t, ts.SetSnapshot("n", Snapshot{Version: "v2", Types: map[string]TypeSnapshot{
		resourcev3.ClusterType: {Version: "v1", Resources: clusters(t, 3, 1)},
		resourcev3.EndpointType: {Version: "e1", Resources: []render.Resource{
			resource(t, "a", assignment("a", "10.0.0.1", 1)), resource(t, "b", assignment("b", "10.0.0.2", 1)),
		}},
	}}))
	require.NoError(t, st2.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: []string{"b"}}))
	r3 := recvTimeout(t, st2.Recv)
	assert.Equal(t, resourcev3.EndpointType, r3.GetTypeUrl())
	assert.Equal(t, []string{"b"}, deltaNames(r3))
	require.NoError(t, st2.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: []string{"a"}, ResourceNamesUnsubscribe: []string{"b"}}))
	r4 := recvTimeout(t, st2.Recv)
	assert.Equal(t, []string{"a"}, deltaNames(r4))
	assert.Empty(t, r4.GetRemovedResources())
}
