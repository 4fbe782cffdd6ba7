// Package transport serves long-lived gRPC streams over HTTP/2 with one
// goroutine per connection and one per stream, writing responses straight
// to the socket from whichever goroutine sends them.
//
// grpc-go's server spends four goroutines on a connection (a reader, a
// writer that every response is handed to, keepalive, the handler) and
// about 33 KiB with them; legate's ADS server holds one stream per proxy
// and pushes the same encoded response to thousands of them at once, where
// that hand-over and that memory are most of the cost (docs/benchmarks.md,
// "What a lean transport would give"). This transport keeps what the ADS
// server needs of gRPC and no more: streaming methods only, the identity
// codec for pre-encoded responses (WireParts) and protobuf otherwise, no
// compression, statuses in trailers. It keeps every bound of grpc-go's and
// x/net's servers that a hostile client could otherwise get round: a
// handshake deadline, header list size (CONTINUATION floods included),
// concurrent streams counted until their handlers return (rapid reset),
// flow control both ways, message size, ping rate, and a deadline on
// every write.
package transport

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"reflect"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// Config is a server's limits. Zero fields take the defaults below.
type Config struct {
	// TLS, when set, is the server's TLS configuration; it must offer
	// "h2" by ALPN (xds.ServerTLS does). Without it the server speaks
	// HTTP/2 in cleartext with prior knowledge, as grpc-go's insecure
	// credentials do.
	TLS *tls.Config
	// MaxConcurrentStreams bounds the streams of one connection, counted
	// until their handlers return.
	MaxConcurrentStreams uint32
	// MaxRecvMsgSize bounds one message a client sends.
	MaxRecvMsgSize int
	// ReceiveWindow is the HTTP/2 window, per stream and per connection,
	// for what clients send.
	ReceiveWindow uint32
	// MaxHeaderListSize bounds a request's header list.
	MaxHeaderListSize uint32
	// HandshakeTimeout bounds the TLS handshake and the HTTP/2 preface.
	HandshakeTimeout time.Duration
	// WriteTimeout bounds writes to a connection: a write that makes no
	// progress ends the connection after between half of WriteTimeout and
	// all of it (the deadline moves once half of it has passed).
	WriteTimeout time.Duration
	// PingAfter and PingTimeout: a connection silent for PingAfter is
	// pinged, and closed when nothing arrives within PingTimeout.
	PingAfter, PingTimeout time.Duration
	// MinPingInterval: a client that pings more often, while the server
	// sends it nothing, is told "too_many_pings" and disconnected (after
	// maxPingStrikes), as grpc-go's keepalive enforcement does.
	MinPingInterval time.Duration
	// Log receives what a handler's panic was, and at V(1) (legate's
	// --log-level debug) why a connection was refused in its handshake or
	// ended for a protocol error: the peer's address and the reason, never
	// what the client sent.
	Log logr.Logger
}

const (
	defaultMaxStreams      = 100
	defaultMaxRecvMsgSize  = 4 << 20
	defaultReceiveWindow   = 1 << 20
	defaultMaxHeaderList   = 16 << 10
	defaultHandshake       = 10 * time.Second
	defaultWriteTimeout    = 30 * time.Second
	defaultPingAfter       = 2 * time.Hour
	defaultPingTimeout     = 20 * time.Second
	defaultMinPingInterval = 5 * time.Minute
	// maxPingStrikes is how many pings too soon a client may send before
	// it is disconnected (grpc-go's value).
	maxPingStrikes = 2
	// maxFrameSize is the largest frame the server reads and, until the
	// client allows more, writes: HTTP/2's initial SETTINGS_MAX_FRAME_SIZE.
	maxFrameSize = 16 << 10
	// maxWriteFrame bounds the DATA frames written whatever larger the
	// client allows, as grpc-go's server does: a client reads a frame
	// whole, and one that keeps its read buffer (x/net's framer does)
	// would otherwise hold a whole response per connection (160 KB for
	// 1 000 clusters: 1.6 GB at 10 000 proxies in the fan-out benchmark's
	// client, which allows 1 MiB frames and then set the pace). Ten frames
	// of a response still go in one write.
	maxWriteFrame = 16 << 10
	// initialWindow is HTTP/2's initial window before SETTINGS.
	initialWindow = 65535
	// initialHeaderTable is HPACK's dynamic table size before SETTINGS.
	initialHeaderTable = 4096
)

func (c Config) withDefaults() Config {
	if c.MaxConcurrentStreams == 0 {
		c.MaxConcurrentStreams = defaultMaxStreams
	}
	if c.MaxRecvMsgSize <= 0 {
		c.MaxRecvMsgSize = defaultMaxRecvMsgSize
	}
	if c.ReceiveWindow < initialWindow {
		c.ReceiveWindow = defaultReceiveWindow
	}
	if c.ReceiveWindow > 1<<31-1 {
		c.ReceiveWindow = 1<<31 - 1
	}
	if c.MaxHeaderListSize == 0 {
		c.MaxHeaderListSize = defaultMaxHeaderList
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = defaultHandshake
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = defaultWriteTimeout
	}
	if c.PingAfter <= 0 {
		c.PingAfter = defaultPingAfter
	}
	if c.PingTimeout <= 0 {
		c.PingTimeout = defaultPingTimeout
	}
	if c.MinPingInterval <= 0 {
		c.MinPingInterval = defaultMinPingInterval
	}
	if c.Log.GetSink() == nil {
		c.Log = logr.Discard()
	}
	return c
}

// method is a registered streaming method.
type method struct {
	impl    any
	handler grpc.StreamHandler
}

// Server serves registered streaming methods. It is a grpc.ServiceRegistrar,
// so generated Register functions take it; register before Serve.
type Server struct {
	cfg     Config
	methods map[string]method // by "/package.Service/Method"

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	stopped   bool
	// wg counts connection goroutines and handlers, so that Stop returns
	// once nothing of the server runs.
	wg sync.WaitGroup
}

// New returns a Server with cfg's limits.
func New(cfg Config) *Server {
	return &Server{
		cfg: cfg.withDefaults(), methods: make(map[string]method),
		listeners: make(map[net.Listener]struct{}), conns: make(map[*conn]struct{}),
	}
}

// RegisterService registers desc's streaming methods, served by impl. It
// panics, as grpc-go's does, when impl does not implement desc's handler
// type, and on unary methods, which this transport does not serve.
func (s *Server) RegisterService(desc *grpc.ServiceDesc, impl any) {
	if impl != nil {
		ht := reflect.TypeOf(desc.HandlerType).Elem()
		if !reflect.TypeOf(impl).Implements(ht) {
			panic(fmt.Sprintf("transport: %T does not implement %v", impl, ht))
		}
	}
	if len(desc.Methods) > 0 {
		panic(fmt.Sprintf("transport: service %s has unary methods, which this transport does not serve", desc.ServiceName))
	}
	for _, sd := range desc.Streams {
		s.methods["/"+desc.ServiceName+"/"+sd.StreamName] = method{impl: impl, handler: sd.Handler}
	}
}

// Serve accepts connections on lis until Stop or lis fails, and closes
// lis when it returns. It returns nil after Stop, as grpc-go's Serve does.
func (s *Server) Serve(lis net.Listener) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		_ = lis.Close()
		return grpc.ErrServerStopped
	}
	s.listeners[lis] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, lis)
		s.mu.Unlock()
		_ = lis.Close()
	}()
	var delay time.Duration
	for {
		nc, err := lis.Accept()
		if err != nil {
			s.mu.Lock()
			stopped := s.stopped
			s.mu.Unlock()
			if stopped {
				return nil
			}
			if ne, ok := err.(interface{ Temporary() bool }); ok && ne.Temporary() {
				// Out of file descriptors, say: wait, as net/http does.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			_ = nc.Close()
			return nil
		}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.serveConn(nc)
		}()
	}
}

// Stop closes the listeners and every connection, which cancels every
// stream, and waits until every handler has returned.
func (s *Server) Stop() {
	for _, c := range s.stopAccepting() {
		c.close(errServerStopped)
	}
	s.wg.Wait()
}

// GracefulStop stops accepting connections, tells every client to open no
// new stream (GOAWAY) and waits for the streams open to end; ADS streams
// rarely do, so the homes call Stop.
func (s *Server) GracefulStop() {
	for _, c := range s.stopAccepting() {
		c.goAway()
	}
	s.wg.Wait()
}

// stopAccepting closes the listeners and returns the open connections.
func (s *Server) stopAccepting() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	for lis := range s.listeners {
		_ = lis.Close()
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}

// serveConn runs one connection: the handshake, then its read loop.
func (s *Server) serveConn(nc net.Conn) {
	c, err := s.handshake(nc)
	if err != nil {
		// A proxy whose certificate another CA signed, or that offers no
		// h2, ends here: said at debug, since anyone may connect.
		s.cfg.Log.V(1).Info("xDS connection refused in its handshake", "peer", nc.RemoteAddr().String(), "reason", err.Error())
		_ = nc.Close()
		return
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		c.close(errServerStopped)
		return
	}
	// Set before close can be called (Stop), which stops it, and armed
	// once set, so that its first tick finds it.
	c.keepalive = time.AfterFunc(time.Duration(1<<62), c.keepaliveTick)
	c.keepalive.Reset(s.cfg.PingAfter)
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	c.serve()
}

// handshake does the TLS handshake, when there is one, and reads the
// client's HTTP/2 preface and first SETTINGS, all within HandshakeTimeout.
func (s *Server) handshake(nc net.Conn) (*conn, error) {
	deadline := time.Now().Add(s.cfg.HandshakeTimeout)
	if err := nc.SetDeadline(deadline); err != nil {
		return nil, err
	}
	var auth credentials.AuthInfo
	rw := nc
	if s.cfg.TLS != nil {
		tc := tls.Server(nc, s.cfg.TLS)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			return nil, err
		}
		state := tc.ConnectionState()
		if state.NegotiatedProtocol != "h2" {
			return nil, fmt.Errorf("the client did not negotiate h2 by ALPN")
		}
		auth = credentials.TLSInfo{State: state, CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}}
		rw = tc
	}
	c := newConn(s, nc, rw, auth)
	if err := c.readPreface(); err != nil {
		return nil, err
	}
	if err := nc.SetDeadline(time.Time{}); err != nil {
		return nil, err
	}
	// The SETTINGS written above set a write deadline too, now cleared:
	// the next write sets its own.
	c.writeDeadline = time.Time{}
	return c, nil
}
