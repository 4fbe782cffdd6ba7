package xds

import (
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"

	"github.com/legate-dev/legate/render"
)

// endpointSnapshot holds the load assignments of names under version v.
func endpointSnapshot(t *testing.T, v string, port uint32, names ...string) Snapshot {
	var rs []render.Resource
	for _, n := range names {
		rs = append(rs, resource(t, n, assignment(n, "10.0.0.1", port)))
	}
	return Snapshot{Version: "s-" + v, Types: map[string]TypeSnapshot{resourcev3.EndpointType: {Version: v, Resources: rs}}}
}

// A proxy that rejected a version and then widens its subscription (asks
// for more EDS names) is not sent the rejected version again for the new
// names: the next response it gets is the next version. The "already sent"
// check alone would not hold it back, the subscription being new.
func TestSotWRejectedVersionIsNotResentWhenTheSubscriptionWidens(t *testing.T) {
	ts := startServer(t, Options{})
	require.NoError(t, ts.SetSnapshot("n", endpointSnapshot(t, "e1", 1, "a", "b")))
	st := sotwStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("n", ""), TypeUrl: resourcev3.EndpointType, ResourceNames: []string{"a"}}))
	r1 := recvTimeout(t, st.Recv)
	require.Equal(t, "e1", r1.GetVersionInfo())
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{
		TypeUrl: resourcev3.EndpointType, ResponseNonce: r1.GetNonce(), ResourceNames: []string{"a", "b"},
		ErrorDetail: &statuspb.Status{Message: "endpoint a: bad port"},
	}))
	require.Eventually(t, func() bool { return len(ts.rec.find(isKind(NACK))) == 1 }, waitFor, pollEvery)

	require.NoError(t, ts.SetSnapshot("n", endpointSnapshot(t, "e2", 2, "a", "b")))
	r2 := recvTimeout(t, st.Recv)
	assert.Equal(t, "e2", r2.GetVersionInfo(), "the rejected e1 was not sent again for the wider subscription")
	assert.Equal(t, []string{"a", "b"}, assignmentNames(t, r2))
}

func TestDeltaRejectedVersionIsNotResentWhenTheSubscriptionWidens(t *testing.T) {
	ts := startServer(t, Options{})
	require.NoError(t, ts.SetSnapshot("n", endpointSnapshot(t, "e1", 1, "a", "b")))
	st := deltaStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DeltaDiscoveryRequest{Node: testNode("n", ""), TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: []string{"a"}}))
	r1 := recvTimeout(t, st.Recv)
	require.Equal(t, "e1", r1.GetSystemVersionInfo())
	// Envoy NACKs a delta response by answering its nonce with
	// error_detail; it may subscribe to more names in the same request.
	require.NoError(t, st.Send(&discoveryv3.DeltaDiscoveryRequest{
		TypeUrl: resourcev3.EndpointType, ResponseNonce: r1.GetNonce(), ResourceNamesSubscribe: []string{"b"},
		ErrorDetail: &statuspb.Status{Message: "endpoint a: bad port"},
	}))
	require.Eventually(t, func() bool { return len(ts.rec.find(isKind(NACK))) == 1 }, waitFor, pollEvery)

	require.NoError(t, ts.SetSnapshot("n", endpointSnapshot(t, "e2", 2, "a", "b")))
	r2 := recvTimeout(t, st.Recv)
	assert.Equal(t, "e2", r2.GetSystemVersionInfo(), "the rejected e1 was not sent again for the new name")
	assert.Equal(t, []string{"a", "b"}, deltaNames(r2))
}
