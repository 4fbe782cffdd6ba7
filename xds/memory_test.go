package xds

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"runtime"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
)

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// heapLive is the bytes of live heap objects after a full collection.
func heapLive() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestStreamStateIsDroppedOnClose connects and disconnects 10 000 streams,
// each of which receives and ACKs a response, and checks that the server
// forgets them: no registered streams and a heap that does not grow.
func TestStreamStateIsDroppedOnClose(t *testing.T) {
	if testing.Short() {
		t.Skip("10 000 streams")
	}
	ts := startServer(t, Options{Observer: ObserverFunc(func(Event) {})})
	require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v1", 10, 1)))
	client := dial(t, ts.addr)
	cycle := func(i int) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		st, err := client.StreamAggregatedResources(ctx)
		require.NoError(t, err)
		pod := ""
		if i%2 == 0 {
			pod = "pod"
		}
		require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("n", pod), TypeUrl: resourcev3.ClusterType}))
		resp, err := st.Recv()
		require.NoError(t, err)
		require.NoError(t, st.Send(ack(resp)))
		require.NoError(t, st.CloseSend())
		_, err = st.Recv() // the server ends the stream after our half-close
		require.Error(t, err)
	}
	waitIdle := func() {
		require.Eventually(t, func() bool { return len(ts.Proxies("n")) == 0 }, waitFor, pollEvery)
	}
	var first, last uint64
	for i := range 10_000 {
		cycle(i)
		switch i {
		case 999:
			waitIdle()
			first = heapInUse()
		case 9_999:
			waitIdle()
			last = heapInUse()
		}
	}
	t.Logf("heap in use after 1 000 cycles: %d KiB, after 10 000: %d KiB", first/1024, last/1024)
	// A leak of the per-stream state (tracker, subscriptions, nonces: well
	// over 1 KiB a stream) would add more than 9 MiB over 9 000 cycles.
	assert.Less(t, int64(last)-int64(first), int64(2<<20))
	ts.mu.Lock()
	assert.Empty(t, ts.nodes["n"].streams)
	assert.Len(t, ts.nodes, 1)
	ts.mu.Unlock()
}

// TestOpenStreamHeapCost pushes a response larger than a write buffer to
// 100 streams, each on its own connection, and checks what the open, idle
// streams keep on the heap: 36 KiB a stream for the server and grpc-go
// client sides of this test together. A connection that kept its own write
// buffer after writing would hold 32 KiB more; a copy of the response per
// stream, 90 KiB.
func TestOpenStreamHeapCost(t *testing.T) {
	if testing.Short() {
		t.Skip("100 connections")
	}
	const streams = 100
	ts := startServer(t, Options{Observer: ObserverFunc(func(Event) {})})
	// About 90 KiB per response: more than the write buffer, so a
	// connection's own buffer would be filled, and kept.
	require.NoError(t, ts.SetSnapshot("n", clusterSnapshot(t, "v1", 1000, 1)))
	var before uint64
	// Stream 0 warms up what every later one shares (protobuf descriptors,
	// codecs, pools): only what the others add is counted.
	for i := range streams + 1 {
		if i == 1 {
			before = heapLive()
		}
		cc, err := grpc.NewClient(ts.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		t.Cleanup(func() { _ = cc.Close() })
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		st, err := discoveryv3.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
		require.NoError(t, err)
		require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("n", fmt.Sprintf("pod-%d", i)), TypeUrl: resourcev3.ClusterType}))
		resp, err := st.Recv()
		require.NoError(t, err)
		require.Greater(t, proto.Size(resp), 64<<10)
		require.NoError(t, st.Send(ack(resp)))
	}
	waitAllACKed(t, ts.Server, streams+1)
	perStream := (int64(heapLive()) - int64(before)) / int64(streams)
	t.Logf("heap per open stream, server and client: %d KiB", perStream/1024)
	assert.Less(t, perStream, int64(48<<10))
}

// TestOpenTLSStreamHeapCost is TestOpenStreamHeapCost over TLS, through
// the lean transport (81 KiB a stream, server and grpc-go client
// together: crypto/tls keeps its record buffers on each side) and
// through grpc-go's, which keeps a read buffer per connection
// (readBuffer): 94–97 KiB, where grpc-go's default 32 KiB buffer made it
// 121 KiB.
func TestOpenTLSStreamHeapCost(t *testing.T) {
	if testing.Short() {
		t.Skip("100 TLS connections")
	}
	const streams = 100
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "legate"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	for _, lean := range []bool{true, false} {
		t.Run(map[bool]string{true: "lean", false: "grpc"}[lean], func(t *testing.T) {
			tlsStreamHeapCost(t, streams, lean, &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS13}, roots)
		})
	}
}

// tlsStreamHeapCost opens streams TLS streams to a server through the lean
// transport or grpc-go's and reports the heap each adds.
func tlsStreamHeapCost(t *testing.T, streams int, lean bool, serverTLS *tls.Config, roots *x509.CertPool) {
	s, err := New(Options{Observer: ObserverFunc(func(Event) {})})
	require.NoError(t, err)
	var gs serving
	if lean {
		serverTLS.NextProtos = []string{"h2"}
		gs = s.NewTransport(serverTLS)
	} else {
		gs = s.NewGRPCServer(grpc.Creds(credentials.NewTLS(serverTLS)))
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = gs.Serve(s.BoundListener(lis)) }()
	t.Cleanup(gs.Stop)
	require.NoError(t, s.SetSnapshot("n", clusterSnapshot(t, "v1", 100, 1)))

	var before uint64
	for i := range streams + 1 {
		if i == 1 {
			before = heapLive()
		}
		cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS13})))
		require.NoError(t, err)
		t.Cleanup(func() { _ = cc.Close() })
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		st, err := discoveryv3.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
		require.NoError(t, err)
		require.NoError(t, st.Send(&discoveryv3.DiscoveryRequest{Node: testNode("n", fmt.Sprintf("pod-%d", i)), TypeUrl: resourcev3.ClusterType}))
		resp, err := st.Recv()
		require.NoError(t, err)
		require.NoError(t, st.Send(ack(resp)))
	}
	waitAllACKed(t, s, streams+1)
	perStream := (int64(heapLive()) - int64(before)) / int64(streams)
	t.Logf("heap per open TLS stream, server and client: %d KiB", perStream/1024)
	assert.Less(t, perStream, int64(110<<10))
}

// waitAllACKed waits until node "n" has n streams, each of which ACKed v1
// with nothing outstanding.
func waitAllACKed(t *testing.T, s *Server, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		ps := s.Proxies("n")
		if len(ps) != n {
			return false
		}
		for _, p := range ps {
			if p.Outstanding != 0 || len(p.Types) != 1 || p.Types[0].AckedVersion != "v1" {
				return false
			}
		}
		return true
	}, waitFor, pollEvery)
}
