package xds

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/legate-dev/legate/render"
)

func TestSotWServesSnapshotAndACK(t *testing.T) {
	ts := startServer(t, Options{})
	snap := clusterSnapshot(t, "v1", 3, 1)
	require.NoError(t, ts.SetSnapshot("node-a", snap))

	st := sotwStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("node-a", "pod-1"), TypeUrl: resourcev3.ClusterType}))
	resp := recvTimeout(t, st.Recv)

	want := &discoveryv3.DiscoveryResponse{VersionInfo: "v1", TypeUrl: resourcev3.ClusterType, Nonce: resp.GetNonce()}
	for _, r := range snap.Types[resourcev3.ClusterType].Resources {
		want.Resources = append(want.Resources, &anypb.Any{TypeUrl: resourcev3.ClusterType, Value: r.Body})
	}
	assert.Empty(t, cmp.Diff(want, resp, protocmp.Transform()))
	var c clusterv3.Cluster
	require.NoError(t, proto.Unmarshal(resp.GetResources()[0].GetValue(), &c))
	assert.Equal(t, "cluster-0000", c.GetName())

	require.NoError(t, st.Send(ack(resp)))
	require.Eventually(t, func() bool { return len(ts.rec.find(isKind(ACK))) == 1 }, waitFor, pollEvery)
	ev := ts.rec.find(isKind(ACK))[0]
	assert.Equal(t, Event{
		Kind: ACK, Node: "node-a", Proxy: "pod-1", TypeURL: resourcev3.ClusterType,
		TypeVersion: "v1", SnapshotVersion: "v1", Outstanding: 0, Time: ev.Time,
	}, ev)
	assert.Len(t, ts.rec.find(isKind(Connected)), 1)

	// A new version goes out to the open stream.
	require.NoError(t, ts.SetSnapshot("node-a", clusterSnapshot(t, "v2", 2, 2)))
	resp2 := recvTimeout(t, st.Recv)
	assert.Equal(t, "v2", resp2.GetVersionInfo())
	assert.Len(t, resp2.GetResources(), 2)
	assert.NotEqual(t, resp.GetNonce(), resp2.GetNonce())

	status := ts.Proxies("node-a")
	require.Len(t, status, 1)
	assert.Equal(t, "pod-1", status[0].Proxy)
	assert.Equal(t, 1, status[0].Outstanding)
	require.Len(t, status[0].Types, 1)
	assert.Equal(t, "v2", status[0].Types[0].SentVersion)
	assert.Equal(t, "v1", status[0].Types[0].AckedVersion)
	// The responses counter moves after SendMsg returns, so the client may
	// hold the response before the server counted it: wait for the count.
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(ts.metrics.responses.WithLabelValues(shortType(resourcev3.ClusterType))) == 2
	}, waitFor, pollEvery, "two responses counted")
	assert.InDelta(t, 1, testutil.ToFloat64(ts.metrics.connected.WithLabelValues("node-a")), 0)
}

func TestSotWUnchangedTypeIsNotResent(t *testing.T) {
	ts := startServer(t, Options{})
	snap := func(version, cdsVersion string, gen int) Snapshot {
		return Snapshot{Version: version, Types: map[string]TypeSnapshot{
			resourcev3.ClusterType:  {Version: cdsVersion, Resources: clusters(t, 2, 0)},
			resourcev3.EndpointType: {Version: version, Resources: []render.Resource{resource(t, "ep", assignment("ep", "10.0.0.1", uint32(1000+gen)))}},
		}}
	}
	require.NoError(t, ts.SetSnapshot("n", snap("s1", "c1", 1)))
	st := sotwStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("n", ""), TypeUrl: resourcev3.ClusterType}))
	cds := recvTimeout(t, st.Recv)
	require.NoError(t, st.Send(ack(cds)))
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResourceNames: []string{"ep"}}))
	eds := recvTimeout(t, st.Recv)
	require.Equal(t, "s1", eds.GetVersionInfo())
	require.NoError(t, st.Send(ack(eds, "ep")))

	require.NoError(t, ts.SetSnapshot("n", snap("s2", "c1", 2)))
	next := recvTimeout(t, st.Recv)
	assert.Equal(t, resourcev3.EndpointType, next.GetTypeUrl(), "only the changed type is sent")
	assert.Equal(t, "s2", next.GetVersionInfo())
	require.NoError(t, st.Send(ack(next, "ep")))
	require.Eventually(t, func() bool { return len(ts.rec.find(isKind(ACK))) == 3 }, waitFor, pollEvery)
	assert.InDelta(t, 1, testutil.ToFloat64(ts.metrics.responses.WithLabelValues(shortType(resourcev3.ClusterType))), 0)
}

func TestSotWNACKIsReportedAndNotResent(t *testing.T) {
	ts := startServer(t, Options{})
	require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v1", 1, 1)))
	st := sotwStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("n", ""), TypeUrl: resourcev3.ClusterType}))
	r1 := recvTimeout(t, st.Recv)
	require.NoError(t, st.Send(ack(r1)))

	require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v2", 1, 2)))
	r2 := recvTimeout(t, st.Recv)
	require.Equal(t, "v2", r2.GetVersionInfo())
	nack := &discoveryv3.DiscoveryRequest{
		TypeUrl: resourcev3.ClusterType, VersionInfo: "v1", ResponseNonce: r2.GetNonce(),
		ErrorDetail: &statuspb.Status{Code: int32(codes.InvalidArgument), Message: "cluster-0000: bad timeout"},
	}
	require.NoError(t, st.Send(nack))
	require.Eventually(t, func() bool { return len(ts.rec.find(isKind(NACK))) == 1 }, waitFor, pollEvery)
	ev := ts.rec.find(isKind(NACK))[0]
	assert.Equal(t, "v2", ev.TypeVersion)
	assert.Equal(t, "v2", ev.SnapshotVersion)
	assert.Equal(t, "cluster-0000: bad timeout", ev.Error)
	assert.Equal(t, 0, ev.Outstanding)
	assert.Regexp(t, `^stream-\d+$`, ev.Proxy)

	// A new snapshot that keeps the rejected cluster version, and further
	// requests, must not bring v2 back.
	require.NoError(t, ts.SetSnapshot("n", Snapshot{Version: "s3", Types: map[string]TypeSnapshot{
		resourcev3.ClusterType: {Version: "v2", Resources: clusters(t, 1, 2)},
	}}))
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.ClusterType, VersionInfo: "v1", ResponseNonce: r2.GetNonce()}))
	// A rollback under a fresh version is sent.
	require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v3", 1, 1)))
	r3 := recvTimeout(t, st.Recv)
	assert.Equal(t, "v3", r3.GetVersionInfo())
	// The counter moves after SendMsg returns, in send order: once v3 is
	// counted, every earlier send is too.
	responses := func() float64 {
		return testutil.ToFloat64(ts.metrics.responses.WithLabelValues(shortType(resourcev3.ClusterType)))
	}
	require.Eventually(t, func() bool { return responses() >= 3 }, waitFor, pollEvery)
	assert.InDelta(t, 3, responses(), 0, "v1, v2 and v3 once each")
	assert.InDelta(t, 1, testutil.ToFloat64(ts.metrics.nacks.WithLabelValues(shortType(resourcev3.ClusterType))), 0)

	ps := ts.Proxies("n")
	require.Len(t, ps, 1)
	require.NotNil(t, ps[0].Types[0].LastNACK)
	assert.Equal(t, "cluster-0000: bad timeout", ps[0].Types[0].LastNACK.Error)
	assert.Equal(t, "v1", ps[0].Types[0].AckedVersion)
}

func TestSotWPushesInADSOrder(t *testing.T) {
	ts := startServer(t, Options{})
	snap := func(v string, port uint32) Snapshot {
		return Snapshot{Version: v, Types: map[string]TypeSnapshot{
			resourcev3.ListenerType: {Version: v, Resources: []render.Resource{resource(t, "lis", apiListener(t, "lis", "rc"))}},
			resourcev3.RouteType:    {Version: v, Resources: []render.Resource{resource(t, "rc", routeTo("rc", v, "c"))}},
			resourcev3.ClusterType:  {Version: v, Resources: []render.Resource{resource(t, "c", edsCluster("c"))}},
			resourcev3.EndpointType: {Version: v, Resources: []render.Resource{resource(t, "c", assignment("c", "127.0.0.1", port))}},
		}}
	}
	require.NoError(t, ts.SetSnapshot("n", snap("v1", 1)))
	st := sotwStreamTo(t, ts.addr)
	// Subscribe in the reverse of the ADS order.
	reqs := []*discoveryv3.DiscoveryRequest{
		{Node: testNode("n", ""), TypeUrl: resourcev3.RouteType, ResourceNames: []string{"rc"}},
		{TypeUrl: resourcev3.ListenerType},
		{TypeUrl: resourcev3.EndpointType, ResourceNames: []string{"c"}},
		{TypeUrl: resourcev3.ClusterType},
	}
	for _, req := range reqs {
		require.NoError(t, st.Send(req))
		resp := recvTimeout(t, st.Recv)
		require.Equal(t, req.GetTypeUrl(), resp.GetTypeUrl())
		require.NoError(t, st.Send(ack(resp, req.GetResourceNames()...)))
	}
	require.NoError(t, ts.SetSnapshot("n", snap("v2", 2)))
	var got []string
	for range 4 {
		resp := recvTimeout(t, st.Recv)
		assert.Equal(t, "v2", resp.GetVersionInfo())
		got = append(got, resp.GetTypeUrl())
	}
	assert.Equal(t, []string{resourcev3.ClusterType, resourcev3.EndpointType, resourcev3.ListenerType, resourcev3.RouteType}, got)
}

func TestSotWNamedSubscription(t *testing.T) {
	ts := startServer(t, Options{})
	eps := []render.Resource{
		resource(t, "a", assignment("a", "10.0.0.1", 1)),
		resource(t, "b", assignment("b", "10.0.0.2", 1)),
		resource(t, "c", assignment("c", "10.0.0.3", 1)),
	}
	require.NoError(t, ts.SetSnapshot("n", Snapshot{Version: "s1", Types: map[string]TypeSnapshot{resourcev3.EndpointType: {Version: "e1", Resources: eps}}}))
	st := sotwStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("n", ""), TypeUrl: resourcev3.EndpointType, ResourceNames: []string{"c", "a"}}))
	r1 := recvTimeout(t, st.Recv)
	assert.Equal(t, []string{"a", "c"}, assignmentNames(t, r1))
	// Asking for one more name with the same version returns the new set.
	require.NoError(t, st.Send(ack(r1, "a", "b", "c")))
	r2 := recvTimeout(t, st.Recv)
	assert.Equal(t, "e1", r2.GetVersionInfo())
	assert.Equal(t, []string{"a", "b", "c"}, assignmentNames(t, r2))
}

func TestStreamNeedsNodeAndAuthorization(t *testing.T) {
	ts := startServer(t, Options{Authorizer: func(_ context.Context, node string) (string, error) {
		if node != "allowed" {
			return "", errors.New("certificate names another node")
		}
		return "spiffe://example.org/allowed", nil
	}})
	st := sotwStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.ClusterType}))
	_, err := st.Recv()
	assert.Equal(t, codes.InvalidArgument, status.Code(err))

	st = sotwStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("other", ""), TypeUrl: resourcev3.ClusterType}))
	_, err = st.Recv()
	assert.Equal(t, codes.PermissionDenied, status.Code(err))
	assert.Contains(t, err.Error(), "certificate names another node")
	assert.Empty(t, ts.rec.find(isKind(Connected)))

	// An admitted stream is counted under the identity the Authorizer
	// proved; the pod name it sends only refines it.
	st = sotwStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("allowed", "edge-7f9"), TypeUrl: resourcev3.ClusterType}))
	require.Eventually(t, func() bool { return len(ts.rec.find(isKind(Connected))) == 1 }, waitFor, pollEvery)
	assert.Equal(t, "spiffe://example.org/allowed/edge-7f9", ts.rec.find(isKind(Connected))[0].Proxy)
	require.Len(t, ts.Proxies("allowed"), 1)
	assert.Equal(t, "spiffe://example.org/allowed/edge-7f9", ts.Proxies("allowed")[0].Proxy)
}

func TestProxyName(t *testing.T) {
	assert.Equal(t, "edge-7f9", proxyName("", "edge-7f9"), "no identity: the pod name")
	assert.Equal(t, "spiffe://td/edge", proxyName("spiffe://td/edge", ""))
	assert.Equal(t, "spiffe://td/edge", proxyName("spiffe://td/edge", "spiffe://td/edge"))
	assert.Equal(t, "spiffe://td/edge/edge-7f9", proxyName("spiffe://td/edge", "edge-7f9"), "metadata refines, never replaces")
}

func assignmentNames(t *testing.T, resp *discoveryv3.DiscoveryResponse) []string {
	t.Helper()
	var names []string
	for _, a := range resp.GetResources() {
		var cla endpointv3.ClusterLoadAssignment
		require.NoError(t, proto.Unmarshal(a.GetValue(), &cla))
		names = append(names, cla.GetClusterName())
	}
	return names
}

func isKind(k EventKind) func(Event) bool { return func(ev Event) bool { return ev.Kind == k } }

// Every event of a stream names the tenant its credentials name, taken
// once from Options.Tenant with the stream's context, so that the engine
// tells a node owner's own proxies from its guests.
func TestEventsNameTheStreamsTenant(t *testing.T) {
	var asked atomic.Int32
	ts := startServer(t, Options{Tenant: func(ctx context.Context) string {
		asked.Add(1)
		if _, ok := peer.FromContext(ctx); !ok {
			return "no peer on the context"
		}
		return "team-a"
	}})
	require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v1", 1, 1)))
	st := sotwStreamTo(t, ts.addr)
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("n", "pod-1"), TypeUrl: resourcev3.ClusterType}))
	r1 := recvTimeout(t, st.Recv)
	require.NoError(t, st.Send(ack(r1)))
	require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v2", 1, 2)))
	r2 := recvTimeout(t, st.Recv)
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{
		TypeUrl: resourcev3.ClusterType, VersionInfo: "v1", ResponseNonce: r2.GetNonce(),
		ErrorDetail: &statuspb.Status{Code: int32(codes.InvalidArgument), Message: "bad"},
	}))
	require.NoError(t, st.CloseSend())
	require.Eventually(t, func() bool { return len(ts.rec.find(isKind(Disconnected))) == 1 }, waitFor, pollEvery)

	kinds := map[EventKind]bool{}
	for _, ev := range ts.rec.all() {
		assert.Equal(t, "team-a", ev.Tenant, "%s event", ev.Kind)
		kinds[ev.Kind] = true
	}
	assert.Equal(t, map[EventKind]bool{Connected: true, ACK: true, NACK: true, Disconnected: true}, kinds)
	assert.EqualValues(t, 1, asked.Load(), "asked once, when the stream starts")
}
