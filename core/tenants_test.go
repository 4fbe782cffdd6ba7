package core

import (
	"context"
	"net"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/sources"
)

// The core gives the engine the tenant of a node's owner (Options.Tenant)
// and the xDS server the tenant of each stream (Options.ProxyTenant): a
// guest's ACK then does not hold back the rollback of what the owner's own
// proxy rejected.
func TestGuestsAnswersDoNotOutvoteTheOwners(t *testing.T) {
	const clusterType = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	c := newCore(t, Options{
		Tenant: func(string) string { return "platform" },
		// The test's streams say which tenant they play; legate's own
		// ProxyTenant reads the client certificate instead.
		ProxyTenant: func(ctx context.Context) string {
			md, _ := metadata.FromIncomingContext(ctx)
			return md.Get("test-tenant")[0]
		},
	})
	ctx := t.Context()
	e := c.Engine()
	require.NoError(t, e.Restore(ctx))
	go func() { _ = c.RunEngine(ctx) }()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gs := c.XDS().NewGRPCServer()
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })

	origin := sources.Origin{Source: "envoyconfig/platform/gw"}
	require.NoError(t, e.Apply(ctx, "gw", config("gw", 1), origin))
	connect := func(pod, tenant string) *testProxy {
		st, err := discoveryv3.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(metadata.AppendToOutgoingContext(ctx, "test-tenant", tenant))
		require.NoError(t, err)
		md, err := structpb.NewStruct(map[string]any{"pod_name": pod})
		require.NoError(t, err)
		require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: "gw", Metadata: md}, TypeUrl: clusterType}))
		p := &testProxy{st: st}
		p.recv(t)
		p.answer(t, "")
		return p
	}
	own, guest := connect("own", "platform"), connect("guest", "team-a")
	require.Eventually(t, func() bool { n, _ := e.Node("gw"); return n.State == revisions.StateInSync }, 10*time.Second, 10*time.Millisecond)

	require.NoError(t, e.Apply(ctx, "gw", config("gw", 2), origin))
	own.recv(t)
	guest.recv(t)
	guest.answer(t, "")
	own.answer(t, "cluster gw: rejected")
	require.Eventually(t, func() bool { n, _ := e.Node("gw"); return n.State == revisions.StateRollback }, 10*time.Second, 10*time.Millisecond,
		"the owner's proxy rejected it: the guest's ACK must not hold back the rollback")
	n, _ := e.Node("gw")
	assert.Equal(t, 1, n.Answers.GuestsAside)
}

// testProxy is one ADS stream of a proxy that answers what it is sent.
type testProxy struct {
	st   discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	last *discoveryv3.DiscoveryResponse
}

func (p *testProxy) recv(t *testing.T) {
	t.Helper()
	got := make(chan error, 1)
	go func() {
		var err error
		p.last, err = p.st.Recv()
		got <- err
	}()
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("no response within 10s")
	}
}

// answer ACKs the last response, or NACKs it with nack.
func (p *testProxy) answer(t *testing.T, nack string) {
	t.Helper()
	req := &discoveryv3.DiscoveryRequest{TypeUrl: p.last.GetTypeUrl(), VersionInfo: p.last.GetVersionInfo(), ResponseNonce: p.last.GetNonce()}
	if nack != "" {
		req.VersionInfo = ""
		req.ErrorDetail = &statuspb.Status{Code: 3, Message: nack}
	}
	require.NoError(t, p.st.Send(req))
}
