package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// envoyWindow is Envoy's default HTTP/2 stream and connection window.
const envoyWindow = 256 << 20

const adsMethod = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"

// header is the part of a DiscoveryResponse the client needs to ACK it. The
// client skips the resources, so its own cost is the same whatever server
// it talks to.
type header struct {
	version, typeURL, nonce string
}

// clientCodec sends requests with the proto codec and reads responses into
// a header.
type clientCodec struct{ proto encoding.CodecV2 }

func (c clientCodec) Marshal(v any) (mem.BufferSlice, error) { return c.proto.Marshal(v) }
func (c clientCodec) Name() string                           { return grpcproto.Name }

func (c clientCodec) Unmarshal(data mem.BufferSlice, v any) error {
	h, ok := v.(*header)
	if !ok {
		return c.proto.Unmarshal(data, v)
	}
	// Walk the received buffers in place: copying a response of 1 000
	// clusters into one slice for each of 1 000 streams would make the
	// client, not the server, the bottleneck of the measurement.
	cur := cursor{bufs: data}
	for !cur.done() {
		tag, err := cur.varint()
		if err != nil {
			return err
		}
		num, typ := protowire.DecodeTag(tag)
		switch typ {
		case protowire.VarintType:
			_, err = cur.varint()
		case protowire.Fixed64Type:
			err = cur.skip(8)
		case protowire.Fixed32Type:
			err = cur.skip(4)
		case protowire.BytesType:
			var n uint64
			if n, err = cur.varint(); err != nil {
				return err
			}
			switch num {
			case 1:
				h.version, err = cur.text(n)
			case 4:
				h.typeURL, err = cur.text(n)
			case 5:
				h.nonce, err = cur.text(n)
			default:
				err = cur.skip(n)
			}
		default:
			err = fmt.Errorf("field %d: unexpected wire type %d", num, typ)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// cursor reads protobuf wire format across the buffers of a received
// message without joining them.
type cursor struct {
	bufs mem.BufferSlice
	i    int // current buffer
	off  int // offset in it
}

var errTruncated = errors.New("truncated message")

func (c *cursor) done() bool {
	for c.i < len(c.bufs) && c.off >= c.bufs[c.i].Len() {
		c.i, c.off = c.i+1, 0
	}
	return c.i >= len(c.bufs)
}

func (c *cursor) byte() (byte, error) {
	if c.done() {
		return 0, errTruncated
	}
	b := c.bufs[c.i].ReadOnlyData()[c.off]
	c.off++
	return b, nil
}

func (c *cursor) varint() (uint64, error) {
	var v uint64
	for shift := 0; shift < 64; shift += 7 {
		b, err := c.byte()
		if err != nil {
			return 0, err
		}
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, errors.New("varint overflows 64 bits")
}

func (c *cursor) skip(n uint64) error {
	for n > 0 {
		if c.done() {
			return errTruncated
		}
		step := min(n, uint64(c.bufs[c.i].Len()-c.off))
		c.off += int(step)
		n -= step
	}
	return nil
}

func (c *cursor) text(n uint64) (string, error) {
	if n > 1<<16 {
		return "", fmt.Errorf("header field of %d bytes", n)
	}
	out := make([]byte, 0, n)
	for uint64(len(out)) < n {
		if c.done() {
			return "", errTruncated
		}
		d := c.bufs[c.i].ReadOnlyData()[c.off:]
		d = d[:min(len(d), int(n)-len(out))]
		out = append(out, d...)
		c.off += len(d)
	}
	return string(out), nil
}

func runClient(args []string, _ io.Writer) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	addr := fs.String("addr", "", "server address")
	streams := fs.Int("streams", 100, "ADS streams to open")
	perConn := fs.Int("streams-per-conn", 1, "streams sharing one connection")
	grpcClient := fs.Bool("grpc", false, "use grpc-go's client instead of the bare HTTP/2 one")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !*grpcClient && *perConn == 1 {
		return runRawClients(*addr, *streams)
	}
	codec := clientCodec{proto: encoding.GetCodecV2(grpcproto.Name)}
	ctx := context.Background()
	var conns []*grpc.ClientConn
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256) // connection setups in flight
	for i := range *streams {
		if i%*perConn == 0 {
			cc, err := grpc.NewClient(*addr,
				grpc.WithTransportCredentials(insecure.NewCredentials()),
				// Envoy opens 256 MiB stream and connection windows; with
				// grpc-go's 64 KiB default a response of 1 000 clusters
				// would wait for window updates, on either server.
				grpc.WithInitialWindowSize(envoyWindow), grpc.WithInitialConnWindowSize(envoyWindow),
				grpc.WithDefaultCallOptions(grpc.ForceCodecV2(codec), grpc.MaxCallRecvMsgSize(1<<30)))
			if err != nil {
				return fmt.Errorf("dial %s: %w", *addr, err)
			}
			conns = append(conns, cc)
		}
		cc := conns[len(conns)-1]
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := stream(ctx, cc, i, sem); err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// stream runs one ADS stream that ACKs every response until it fails.
func stream(ctx context.Context, cc *grpc.ClientConn, i int, sem chan struct{}) error {
	released := false
	release := func() {
		if !released {
			released = true
			<-sem
		}
	}
	defer release()
	s, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, adsMethod)
	if err != nil {
		return fmt.Errorf("open stream %d: %w", i, err)
	}
	node := &corev3.Node{Id: benchNode, Cluster: fmt.Sprintf("proxy-%d", i)}
	if err := s.SendMsg(&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: resourcev3.ClusterType}); err != nil {
		return fmt.Errorf("stream %d: %w", i, err)
	}
	for {
		var h header
		if err := s.RecvMsg(&h); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("stream %d: %w", i, err)
		}
		release()
		if err := s.SendMsg(&discoveryv3.DiscoveryRequest{TypeUrl: h.typeURL, VersionInfo: h.version, ResponseNonce: h.nonce}); err != nil {
			return fmt.Errorf("stream %d: %w", i, err)
		}
	}
}

// runRawClients runs n streams of rawStream, at most 256 connecting at once.
// The first stream to fail ends the client: the server would otherwise wait
// for an ACK that never comes until the cell's timeout.
func runRawClients(addr string, n int) error {
	errc := make(chan error, 1)
	sem := make(chan struct{}, 256)
	for i := range n {
		select {
		case sem <- struct{}{}:
		case err := <-errc:
			return err
		}
		go func() {
			released := false
			release := func() {
				if !released {
					released = true
					<-sem
				}
			}
			defer release()
			err := rawStream(addr, i, release)
			if err == nil {
				err = fmt.Errorf("stream %d: the server ended it", i)
			}
			select {
			case errc <- err:
			default:
			}
		}()
	}
	return <-errc
}
