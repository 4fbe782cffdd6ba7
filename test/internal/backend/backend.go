// Package backend is the gRPC workload of legate's end-to-end tests: a
// test service on loopback that answers with its own name, and a grpc-go
// xDS client that calls it through the configuration legate serves, so a
// test can tell which route an RPC took.
package backend

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

// Server is a gRPC test service that answers UnaryCall with its name.
type Server struct {
	testgrpc.UnimplementedTestServiceServer
	// Name is what UnaryCall answers in ServerId.
	Name string
	// Port is the loopback port it listens on.
	Port int
}

// UnaryCall answers with the server's name.
func (s *Server) UnaryCall(context.Context, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	return &testgrpc.SimpleResponse{ServerId: s.Name}, nil
}

// Start serves a Server named name on a loopback port until the test ends.
func Start(t testing.TB, name string) *Server {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &Server{Name: name, Port: lis.Addr().(*net.TCPAddr).Port}
	gs := grpc.NewServer()
	testgrpc.RegisterTestServiceServer(gs, s)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return s
}

// Client is grpc-go's xDS client with its own bootstrap, so every Client is
// a separate proxy with its own ADS stream.
type Client struct {
	svc testgrpc.TestServiceClient
}

// Dial connects a Client to the ADS server at xdsAddr as node nodeID with
// metadata pod_name pod, dialing xds:///listener. The connection closes
// when the test ends.
func Dial(t testing.TB, xdsAddr, nodeID, pod, listener string, opts ...grpc.DialOption) *Client {
	t.Helper()
	return DialBootstrap(t, xdsclient.Bootstrap{ServerAddr: xdsAddr, NodeID: nodeID, Metadata: map[string]any{"pod_name": pod}}, listener, opts...)
}

// DialBootstrap is Dial with a bootstrap of the test's own (TLS, say).
func DialBootstrap(t testing.TB, bs xdsclient.Bootstrap, listener string, opts ...grpc.DialOption) *Client {
	t.Helper()
	res, err := bs.Resolver()
	require.NoError(t, err)
	opts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithResolvers(res)}, opts...)
	conn, err := grpc.NewClient("xds:///"+listener, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	conn.Connect()
	return &Client{svc: testgrpc.NewTestServiceClient(conn)}
}

// PodIP is the address the tests give their backends in EndpointSlices,
// which may not name a loopback address (the API server refuses them):
// 192.0.2.1, of TEST-NET-1, never routed.
const PodIP = "192.0.2.1"

// ToLoopback is a dial option that connects the client's backend
// connections to PodIP:PORT on 127.0.0.1:PORT instead, where the tests'
// backends listen. The xDS stream itself is not redirected.
func ToLoopback() grpc.DialOption {
	return grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if host == PodIP {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	})
}

// Call makes one RPC and returns the name of the Server that answered, or
// "" when the RPC failed within two seconds.
func (c *Client) Call() string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := c.svc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
	if err != nil {
		return ""
	}
	return resp.GetServerId()
}
