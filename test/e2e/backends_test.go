package e2e

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"

	"github.com/legate-dev/legate/test/xdsclient"
)

// backend is a gRPC test service that answers UnaryCall with its own name,
// so a client can tell which configuration routed its RPC.
type backend struct {
	testgrpc.UnimplementedTestServiceServer
	name string
	port int
}

func (b *backend) UnaryCall(context.Context, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	return &testgrpc.SimpleResponse{ServerId: b.name}, nil
}

// startBackend serves a backend named name on a loopback port.
func startBackend(t *testing.T, name string) *backend {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b := &backend{name: name, port: lis.Addr().(*net.TCPAddr).Port}
	gs := grpc.NewServer()
	testgrpc.RegisterTestServiceServer(gs, b)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return b
}

// grpcClient is grpc-go's xDS client dialing xds:///greeter with its own
// bootstrap, so every client is a separate proxy with its own ADS stream.
type grpcClient struct {
	t    *testing.T
	conn *grpc.ClientConn
	svc  testgrpc.TestServiceClient
}

// newGRPCClient connects a grpc-go xDS client to the ADS server at addr
// as node nodeID with pod_name pod.
func newGRPCClient(t *testing.T, addr, pod string) *grpcClient {
	t.Helper()
	bs := xdsclient.Bootstrap{ServerAddr: addr, NodeID: nodeID, Metadata: map[string]any{"pod_name": pod}}
	res, err := bs.Resolver()
	require.NoError(t, err)
	conn, err := grpc.NewClient("xds:///"+listenerName,
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithResolvers(res))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	conn.Connect()
	return &grpcClient{t: t, conn: conn, svc: testgrpc.NewTestServiceClient(conn)}
}

// call makes one RPC and returns the name of the backend that answered,
// or "" when the RPC failed.
func (c *grpcClient) call() string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := c.svc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
	if err != nil {
		return ""
	}
	return resp.GetServerId()
}

// lands waits until RPCs land on the named backend.
func (c *grpcClient) lands(name string, msgAndArgs ...any) {
	c.t.Helper()
	require.Eventually(c.t, func() bool { return c.call() == name }, waitFor, pollEvery, msgAndArgs...)
}

// keepsLanding checks that n RPCs in a row land on the named backend.
func (c *grpcClient) keepsLanding(name string, n int) {
	c.t.Helper()
	got := map[string]int{}
	for range n {
		got[c.call()]++
	}
	require.Equal(c.t, map[string]int{name: n}, got, "every RPC lands on %s", name)
}
