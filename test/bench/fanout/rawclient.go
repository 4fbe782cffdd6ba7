package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// rawStream is one ADS stream on its own connection, spoken with a bare
// HTTP/2 framer on a single goroutine: read a frame, and when a response is
// complete write its ACK. grpc-go's client spends three goroutine hand-overs
// and a write per ACK (reader, stream, writer); with thousands of streams
// on the same two cores as the server, that client was the bottleneck of
// the measurement and capped the ratio between the two servers.
func rawStream(addr string, i int, connected func()) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return fmt.Errorf("stream %d: %w", i, err)
	}
	defer conn.Close()
	w := bufio.NewWriterSize(conn, 4<<10)
	fr := http2.NewFramer(w, bufio.NewReaderSize(conn, 64<<10))
	fr.SetMaxReadFrameSize(1 << 20)
	if _, err := io.WriteString(w, http2.ClientPreface); err != nil {
		return err
	}
	// Envoy's default windows (256 MiB): no window update is ever due in
	// a run of the benchmark.
	if err := fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: envoyWindow},
		http2.Setting{ID: http2.SettingMaxFrameSize, Val: 1 << 20}); err != nil {
		return err
	}
	if err := fr.WriteWindowUpdate(0, envoyWindow-65535); err != nil {
		return err
	}
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{
		{":method", "POST"},
		{":scheme", "http"},
		{":authority", addr},
		{":path", adsMethod},
		{"content-type", "application/grpc"},
		{"te", "trailers"},
	} {
		if err := enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}); err != nil {
			return err
		}
	}
	const sid = 1
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: sid, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
		return err
	}
	first := &discoveryv3.DiscoveryRequest{
		Node:    &corev3.Node{Id: benchNode, Cluster: fmt.Sprintf("proxy-%d", i)},
		TypeUrl: resourcev3.ClusterType,
	}
	var out []byte
	send := func(req *discoveryv3.DiscoveryRequest) error {
		b, err := proto.MarshalOptions{}.MarshalAppend(out[:0], req)
		if err != nil {
			return err
		}
		out = b
		var prefix [5]byte
		binary.BigEndian.PutUint32(prefix[1:], uint32(len(b)))
		if err := fr.WriteData(sid, false, append(prefix[:], b...)); err != nil {
			return err
		}
		return w.Flush()
	}
	if err := send(first); err != nil {
		return fmt.Errorf("stream %d: %w", i, err)
	}
	// msg collects one gRPC message (5-byte prefix, then the response).
	var msg []byte
	want := -1
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("stream %d: the server closed the connection", i)
			}
			return fmt.Errorf("stream %d: %w", i, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if err := fr.WriteSettingsAck(); err != nil {
					return err
				}
				if err := w.Flush(); err != nil {
					return err
				}
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				if err := fr.WritePing(true, f.Data); err != nil {
					return err
				}
				if err := w.Flush(); err != nil {
					return err
				}
			}
		case *http2.GoAwayFrame:
			return fmt.Errorf("stream %d: the server sent GOAWAY %v %q", i, f.ErrCode, f.DebugData())
		case *http2.RSTStreamFrame:
			return fmt.Errorf("stream %d reset by the server: %v", i, f.ErrCode)
		case *http2.HeadersFrame:
			if f.StreamEnded() {
				return fmt.Errorf("stream %d ended by the server", i)
			}
		case *http2.DataFrame:
			msg = append(msg, f.Data()...)
			for {
				if want < 0 && len(msg) >= 5 {
					want = 5 + int(binary.BigEndian.Uint32(msg[1:5]))
				}
				if want < 0 || len(msg) < want {
					break
				}
				var h header
				if err := (clientCodec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(msg[5:want])}, &h); err != nil {
					return fmt.Errorf("stream %d: %w", i, err)
				}
				msg, want = append(msg[:0], msg[want:]...), -1
				if connected != nil {
					connected()
					connected = nil
				}
				if err := send(&discoveryv3.DiscoveryRequest{TypeUrl: h.typeURL, VersionInfo: h.version, ResponseNonce: h.nonce}); err != nil {
					return fmt.Errorf("stream %d: %w", i, err)
				}
			}
		}
	}
}
