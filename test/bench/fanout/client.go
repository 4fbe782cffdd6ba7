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
	b := data.Materialize()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.BytesType {
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			b = b[m:]
			continue
		}
		val, m := protowire.ConsumeBytes(b)
		if m < 0 {
			return protowire.ParseError(m)
		}
		b = b[m:]
		switch num {
		case 1:
			h.version = string(val)
		case 4:
			h.typeURL = string(val)
		case 5:
			h.nonce = string(val)
		}
	}
	return nil
}

func runClient(args []string, _ io.Writer) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	addr := fs.String("addr", "", "server address")
	streams := fs.Int("streams", 100, "ADS streams to open")
	perConn := fs.Int("streams-per-conn", 1, "streams sharing one connection")
	if err := fs.Parse(args); err != nil {
		return err
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
