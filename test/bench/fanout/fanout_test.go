package main

import (
	"bytes"
	"net"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

func TestClientCodecReadsHeader(t *testing.T) {
	b, err := proto.Marshal(&discoveryv3.DiscoveryResponse{
		VersionInfo: "v7", TypeUrl: resourcev3.ClusterType, Nonce: "42",
		Resources: []*anypb.Any{{TypeUrl: resourcev3.ClusterType, Value: []byte("x")}},
	})
	require.NoError(t, err)
	var h header
	c := clientCodec{proto: encoding.GetCodecV2(grpcproto.Name)}
	require.NoError(t, c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b[:7]), mem.SliceBuffer(b[7:])}, &h))
	assert.Equal(t, header{version: "v7", typeURL: resourcev3.ClusterType, nonce: "42"}, h)
	assert.Error(t, c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b[:len(b)-1])}, &h))
}

func TestWriteTableAndSVG(t *testing.T) {
	run := &Run{Results: []*Result{
		{Impl: "gcp", Streams: 10, Clusters: 5, P50Ms: 40, P99Ms: 50, CPUSeconds: 1, PeakRSSBytes: 64 << 20},
		{Impl: "legate", Streams: 10, Clusters: 5, P50Ms: 8, P99Ms: 9, CPUSeconds: 0.5, PeakRSSBytes: 32 << 20},
		{Impl: "gcp", Streams: 20, Clusters: 5, Error: "timeout"},
	}}
	var table bytes.Buffer
	require.NoError(t, writeTable(&table, run))
	assert.Contains(t, table.String(), "| 10 × 5 | 40.0 / 50.0 ms | 8.0 / 9.0 ms | 5.0× | 1.00 s / 64 MiB | 0.50 s / 32 MiB |")
	assert.Contains(t, table.String(), "| 20 × 5 | failed | not run | – |")
	var svg bytes.Buffer
	require.NoError(t, writeSVG(&svg, run))
	assert.Contains(t, svg.String(), "<svg")
	assert.Equal(t, 4, bytes.Count(svg.Bytes(), []byte("<rect x=")), "two bars and two legend boxes")
	assert.Error(t, writeSVG(&svg, &Run{}))
}

// TestRawClientACKs runs the bare HTTP/2 client against legate's server,
// through its lean transport and through grpc-go's: every publish must
// come back as an ACK of its version.
func TestRawClientACKs(t *testing.T) {
	for _, lean := range []bool{true, false} {
		t.Run(map[bool]string{true: "lean", false: "grpc"}[lean], func(t *testing.T) {
			clusterCount = 50
			counter := &acks{}
			var gs grpcServer
			var bound func(net.Listener) net.Listener
			publish, err := startLegate(&gs, lean, counter, &bound)
			require.NoError(t, err)
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			go func() { _ = gs.Serve(bound(lis)) }()
			t.Cleanup(gs.Stop)
			expectACKs(t, lis.Addr().String(), counter, publish)
		})
	}
}

// TestH2CellACKs runs the bare HTTP/2 client against the lean-transport
// measurement (h2server.go): it must answer as legate's server does.
func TestH2CellACKs(t *testing.T) {
	clusterCount = 50
	counter := &acks{}
	publish, serve := startH2(counter)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go serve(lis)
	t.Cleanup(func() { _ = lis.Close() })
	expectACKs(t, lis.Addr().String(), counter, publish)
}

// expectACKs connects two bare clients to addr after the first publish
// and waits for both streams' ACK of each of two versions.
func expectACKs(t *testing.T, addr string, counter *acks, publish publisher) {
	t.Helper()
	for i, v := range []string{"v0", "v1"} {
		reached := counter.expect(v, 2)
		require.NoError(t, publish(v, i))
		if i == 0 {
			for s := range 2 {
				go func() { _ = rawStream(addr, s, nil) }()
			}
		}
		select {
		case <-reached:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: %d of 2 streams ACKed", v, len(counter.latencies()))
		}
	}
}
