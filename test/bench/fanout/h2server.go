package main

// The "h2" cell: what a lean transport could give legate's fan-out and
// memory (issue 30 items 1 and 2). It is a measurement, not a server to
// run: ADS state of the world for one node and one type over a bare
// HTTP/2 framer, with one goroutine per connection (it reads frames and
// handles requests) and pushes written by up to 64 shared pushers straight
// to the socket, one writev per response (frame header, gRPC prefix, the
// response encoded once per version, the stream's nonce). grpc-go's server
// spends four goroutines on a connection (reader, writer, keepalive, the
// handler) and hands every response to the connection's writer goroutine.
//
// Left out, because the benchmark's clients never need them, and needed by
// any real transport: TLS, flow control of what the server sends (the
// clients open 256 MiB windows), CONTINUATION frames, more than one stream
// or type per connection, deadlines, keepalive, GOAWAY, the bounds on
// every client-controlled size, and errors reported as gRPC statuses.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// h2Server is the lean transport's state: the connected streams and the
// response of the newest version, encoded once without its nonce.
type h2Server struct {
	counter *acks

	mu      sync.Mutex
	conns   map[*h2Conn]struct{}
	body    []byte // the DiscoveryResponse without its nonce
	version string

	qmu     sync.Mutex
	queue   []*h2Conn
	pushers int
}

// h2Conn is one client connection carrying one ADS stream.
type h2Conn struct {
	srv *h2Server
	nc  net.Conn

	wmu     sync.Mutex // held while writing to nc
	fr      *http2.Framer
	stream  uint32 // 0 until the client opened its stream
	headers bool   // response headers sent
	sent    string // version last sent
	nonce   uint64
	queued  bool // in srv.queue (srv.qmu)
	dead    bool
}

func startH2(counter *acks) (publisher, func(net.Listener)) {
	s := &h2Server{counter: counter, conns: map[*h2Conn]struct{}{}}
	serve := func(lis net.Listener) {
		for {
			nc, err := lis.Accept()
			if err != nil {
				return
			}
			go s.serveConn(nc)
		}
	}
	return s.publish, serve
}

// publish encodes version's response once and queues every stream.
func (s *h2Server) publish(version string, gen int) error {
	cs := makeClusters(clusterCount, gen)
	resp := &discoveryv3.DiscoveryResponse{VersionInfo: version, TypeUrl: resourcev3.ClusterType}
	for _, c := range cs {
		a, err := anypb.New(c)
		if err != nil {
			return err
		}
		resp.Resources = append(resp.Resources, a)
	}
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(resp)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.body, s.version = body, version
	conns := make([]*h2Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		s.enqueue(c)
	}
	return nil
}

const h2Pushers = 64

func (s *h2Server) enqueue(c *h2Conn) {
	s.qmu.Lock()
	if c.queued {
		s.qmu.Unlock()
		return
	}
	c.queued = true
	s.queue = append(s.queue, c)
	start := s.pushers < h2Pushers
	if start {
		s.pushers++
	}
	s.qmu.Unlock()
	if start {
		go s.runPusher()
	}
}

func (s *h2Server) runPusher() {
	for {
		s.qmu.Lock()
		if len(s.queue) == 0 {
			s.queue = nil
			s.pushers--
			s.qmu.Unlock()
			return
		}
		c := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		c.queued = false
		s.qmu.Unlock()
		c.push()
	}
}

// push writes the newest response unless the stream has it.
func (c *h2Conn) push() {
	c.srv.mu.Lock()
	body, version := c.srv.body, c.srv.version
	c.srv.mu.Unlock()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.dead || c.stream == 0 || body == nil || c.sent == version {
		return
	}
	if !c.headers {
		var hb bytes.Buffer
		enc := hpack.NewEncoder(&hb)
		_ = enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
		_ = enc.WriteField(hpack.HeaderField{Name: "content-type", Value: "application/grpc"})
		if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: c.stream, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
			c.dead = true
			return
		}
		c.headers = true
	}
	c.nonce++
	var nonce []byte
	nonce = protowire.AppendTag(nonce, 5, protowire.BytesType) // DiscoveryResponse.nonce
	nonce = protowire.AppendString(nonce, strconv.FormatUint(c.nonce, 10))
	msgLen := len(body) + len(nonce)
	// One DATA frame (the clients allow 1 MiB frames): frame header, gRPC
	// prefix, then the shared body and the nonce, in one writev.
	var hdr [9 + 5]byte
	n := 5 + msgLen
	hdr[0], hdr[1], hdr[2] = byte(n>>16), byte(n>>8), byte(n)
	hdr[3] = byte(http2.FrameData)
	binary.BigEndian.PutUint32(hdr[5:9], c.stream)
	binary.BigEndian.PutUint32(hdr[10:14], uint32(msgLen))
	bufs := net.Buffers{hdr[:], body, nonce}
	if _, err := bufs.WriteTo(c.nc); err != nil {
		c.dead = true
		return
	}
	c.sent = version
}

func (s *h2Server) serveConn(nc net.Conn) {
	defer nc.Close()
	c := &h2Conn{srv: s, nc: nc}
	br := bufio.NewReaderSize(nc, 2<<10)
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(br, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	c.fr = http2.NewFramer(nc, br)
	c.fr.SetMaxReadFrameSize(1 << 20)
	c.wmu.Lock()
	err := c.fr.WriteSettings()
	c.wmu.Unlock()
	if err != nil {
		return
	}
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.wmu.Lock()
		c.dead = true
		c.wmu.Unlock()
	}()
	var msg []byte
	received := 0
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				c.wmu.Lock()
				err = c.fr.WriteSettingsAck()
				c.wmu.Unlock()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				c.wmu.Lock()
				err = c.fr.WritePing(true, f.Data)
				c.wmu.Unlock()
			}
		case *http2.HeadersFrame:
			c.wmu.Lock()
			c.stream = f.StreamID
			c.wmu.Unlock()
		case *http2.DataFrame:
			msg = append(msg, f.Data()...)
			received += len(f.Data())
			if received > 32<<10 {
				// What the client sent is consumed: give its window back.
				c.wmu.Lock()
				err = errors.Join(c.fr.WriteWindowUpdate(0, uint32(received)), c.fr.WriteWindowUpdate(f.StreamID, uint32(received)))
				c.wmu.Unlock()
				received = 0
			}
			for err == nil && len(msg) >= 5 {
				n := 5 + int(binary.BigEndian.Uint32(msg[1:5]))
				if len(msg) < n {
					break
				}
				err = c.handle(msg[5:n])
				msg = append(msg[:0], msg[n:]...)
			}
		}
		if err != nil {
			return
		}
	}
}

// handle takes one DiscoveryRequest: the first subscribes the stream, an
// ACK is counted.
func (c *h2Conn) handle(b []byte) error {
	var req discoveryv3.DiscoveryRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		return fmt.Errorf("decode a request: %w", err)
	}
	if req.GetResponseNonce() == "" {
		c.srv.mu.Lock()
		c.srv.conns[c] = struct{}{}
		c.srv.mu.Unlock()
		c.srv.enqueue(c)
		return nil
	}
	if req.GetErrorDetail() == nil {
		c.srv.counter.ack(req.GetVersionInfo())
	}
	return nil
}
