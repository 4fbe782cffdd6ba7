package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/test/internal/backend"
)

// startBackend serves a backend that answers with name on a loopback port.
func startBackend(t *testing.T, name string) *backend.Server {
	t.Helper()
	return backend.Start(t, name)
}

// grpcClient is grpc-go's xDS client dialing the test's listener with its
// own bootstrap, so every client is a separate proxy with its own ADS
// stream.
type grpcClient struct {
	t          *testing.T
	c          *backend.Client
	wait, poll time.Duration
}

// newGRPCClient connects a grpc-go xDS client to the ADS server at addr
// as node nodeID with pod_name pod, dialing xds:///greeter.
func newGRPCClient(t *testing.T, addr, pod string) *grpcClient {
	t.Helper()
	return &grpcClient{t: t, c: backend.Dial(t, addr, nodeID, pod, listenerName), wait: waitFor, poll: pollEvery}
}

// call makes one RPC and returns the name of the backend that answered,
// or "" when the RPC failed.
func (c *grpcClient) call() string { return c.c.Call() }

// lands waits until RPCs land on the named backend.
func (c *grpcClient) lands(name string, msgAndArgs ...any) {
	c.t.Helper()
	require.Eventually(c.t, func() bool { return c.call() == name }, c.wait, c.poll, msgAndArgs...)
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
