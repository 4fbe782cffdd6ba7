package xds

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	clocktesting "k8s.io/utils/clock/testing"
)

// lines keeps what a funcr logger wrote.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, prefix+" "+args)
}

func (l *lines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.all...)
}

// served says whether the server behind addr speaks HTTP/2 on a fresh
// connection (its SETTINGS frame arrives) or resets it unread.
func served(t *testing.T, addr string) bool {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, waitFor)
	if errors.Is(err, syscall.ECONNRESET) {
		return false // reset before the dial returned
	}
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(waitFor)))
	// grpc-go answers its client preface with SETTINGS; it waits for the
	// preface before writing.
	_, err = io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
	if err != nil {
		return false
	}
	var b [9]byte
	_, err = io.ReadFull(c, b[:])
	require.NotErrorIs(t, err, os.ErrDeadlineExceeded, "neither served nor refused within %s", waitFor)
	return err == nil
}

// The xDS listener holds at most MaxConnections; one more is reset at
// accept, counted, and logged once a minute however many there are; a
// closed connection frees its slot. Through the real gRPC server.
func TestConnectionsBeyondTheBoundAreRefused(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var logged lines
	reg := prometheus.NewRegistry()
	s, err := New(Options{
		MaxConnections: 2, MaxConnectionsSetting: "xdsMaxConnections (--xds-max-connections)",
		Clock: clk, Registerer: reg, Log: funcr.New(logged.add, funcr.Options{}),
	})
	require.NoError(t, err)
	require.NoError(t, s.SetSnapshot("n", clusterSnapshot(t, "v1", 1, 1)))
	gs := s.NewGRPCServer()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = gs.Serve(s.BoundListener(raw)) }()
	t.Cleanup(gs.Stop)
	addr := raw.Addr().String()

	// Two proxies are served, each on a connection of its own.
	var conns []*grpc.ClientConn
	for range 2 {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		t.Cleanup(func() { _ = cc.Close() })
		conns = append(conns, cc)
		st, err := discoveryv3.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(t.Context())
		require.NoError(t, err)
		require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("n", ""), TypeUrl: resourcev3.ClusterType}))
		recvTimeout(t, st.Recv)
	}
	assert.InDelta(t, 2, testutil.ToFloat64(s.metrics.conns), 0)

	// A third is reset, and so are the next ones: one log line.
	refused := func(n float64) func() bool {
		return func() bool { return testutil.ToFloat64(s.metrics.connsRefused) == n }
	}
	for i := range 3 {
		assert.False(t, served(t, addr), "a connection beyond the bound is refused")
		require.Eventually(t, refused(float64(i+1)), waitFor, pollEvery)
	}
	require.Len(t, logged.get(), 1)
	assert.Contains(t, logged.get()[0], `"max"=2`)
	assert.Contains(t, logged.get()[0], `"refused"=1`)
	assert.Contains(t, logged.get()[0], "--xds-max-connections")
	assert.Contains(t, logged.get()[0], `"lastPeer"="127.0.0.1"`)

	// A minute on, the next refusal is logged with those kept back.
	clk.Step(time.Minute)
	assert.False(t, served(t, addr))
	require.Eventually(t, refused(4), waitFor, pollEvery)
	require.Len(t, logged.get(), 2)
	assert.Contains(t, logged.get()[1], `"refused"=3`)

	// A proxy that goes away gives its slot back.
	require.NoError(t, conns[0].Close())
	require.Eventually(t, func() bool { return testutil.ToFloat64(s.metrics.conns) == 1 }, waitFor, pollEvery)
	assert.True(t, served(t, addr), "a freed slot is taken again")
	assert.InDelta(t, 4, testutil.ToFloat64(s.metrics.connsRefused), 0)
	for _, l := range logged.get() {
		assert.NotContains(t, l, "error")
	}
}

// A connection that never completes its handshake is closed after
// handshakeTimeout and gives its place back: a client that opens
// connections and says nothing cannot keep the listener full.
func TestSilentConnectionsAreClosedAfterTheHandshakeTimeout(t *testing.T) {
	defer func(d time.Duration) { handshakeTimeout = d }(handshakeTimeout)
	handshakeTimeout = 300 * time.Millisecond
	s, err := New(Options{MaxConnections: 1})
	require.NoError(t, err)
	gs := s.NewGRPCServer()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = gs.Serve(s.BoundListener(raw)) }()
	t.Cleanup(gs.Stop)

	silent, err := net.Dial("tcp", raw.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = silent.Close() })
	require.NoError(t, silent.SetReadDeadline(time.Now().Add(20*time.Second)))
	_, err = io.Copy(io.Discard, silent) // the server's preface, then its close
	require.NoError(t, err, "the server closes a silent connection well before 20 s")

	// Its place is free again: a proxy is served.
	require.NoError(t, s.SetSnapshot("n", clusterSnapshot(t, "v1", 1, 1)))
	cc, err := grpc.NewClient(raw.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	st, err := discoveryv3.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(t.Context())
	require.NoError(t, err)
	require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("n", ""), TypeUrl: resourcev3.ClusterType}))
	recvTimeout(t, st.Recv)
}
