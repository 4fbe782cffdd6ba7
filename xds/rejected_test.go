package xds

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
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

// A proxy's status says where it connects from and which client it is,
// from node.user_agent_name and its version, or else its build version.
func TestProxyStatusShowsPeerAndUserAgent(t *testing.T) {
	ts := startServer(t, Options{})
	require.NoError(t, ts.SetSnapshot("n", endpointSnapshot(t, "e1", 1, "a")))
	for _, tc := range []struct {
		node *corev3.Node
		want string
	}{
		{&corev3.Node{Id: "n", UserAgentName: "envoy", UserAgentVersionType: &corev3.Node_UserAgentVersion{UserAgentVersion: "1.36.0"}}, "envoy 1.36.0"},
		{&corev3.Node{Id: "n", UserAgentName: "envoy", UserAgentVersionType: &corev3.Node_UserAgentBuildVersion{UserAgentBuildVersion: &corev3.BuildVersion{
			Version: &typev3.SemanticVersion{MajorNumber: 1, MinorNumber: 35, Patch: 2},
		}}}, "envoy 1.35.2"},
	} {
		st := sotwStreamTo(t, ts.addr)
		require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: tc.node, TypeUrl: resourcev3.EndpointType, ResourceNames: []string{"a"}}))
		recvTimeout(t, st.Recv)
		var found bool
		for _, p := range ts.Proxies("n") {
			if p.UserAgent == tc.want {
				found = true
				assert.Regexp(t, `^127\.0\.0\.1:\d+$`, p.Address)
			}
		}
		assert.True(t, found, "a proxy shows %q: %+v", tc.want, ts.Proxies("n"))
	}
}
