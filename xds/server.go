package xds

import (
	"context"
	"crypto/tls"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/utils/clock"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/xds/transport"
)

// Authorizer decides whether a stream may act as nodeID. It is called once
// per stream, on its first request, with the stream's context (which carries
// the peer and its TLS state). A non-nil error closes the stream with
// PermissionDenied and the error's text. The identity it returns (for
// example the client certificate's SPIFFE ID) is what the stream's answers
// are counted under; node metadata can only refine it (see proxyName).
type Authorizer func(ctx context.Context, nodeID string) (identity string, err error)

// Recheck decides, before every push of a new snapshot and after
// Server.Reauthorize, whether a stream may still receive nodeID's
// configuration now that owner (Snapshot.Owner, "" when the node has none
// or no snapshot yet) owns it. It is called on the stream's goroutine with
// the stream's context and must not block for long: it runs before the
// stream sends anything. A non-nil error closes the stream with
// PermissionDenied before it receives the snapshot, and no answer it sends
// afterwards is counted.
type Recheck func(ctx context.Context, nodeID, owner string) error

// Options configure a Server. Every field is optional.
type Options struct {
	// Observer receives Connected, Disconnected, ACK and NACK events.
	Observer Observer
	// Registerer receives the legate_xds_* metrics.
	Registerer prometheus.Registerer
	// Authorizer checks a stream's node ID; nil admits every stream.
	Authorizer Authorizer
	// Recheck checks, at every push, that a stream may still receive its
	// node; nil checks nothing beyond the Authorizer.
	Recheck Recheck
	// Tenant is the tenant a stream's credentials name (in a cluster, the
	// namespace of its client certificate), put on each of its events
	// (revisions.ProxyEvent.Tenant) so that the engine tells a node
	// owner's own proxies from its guests; nil names none.
	Tenant func(ctx context.Context) string
	// Log receives stream errors; the zero value discards them.
	Log logr.Logger
	// Clock stamps events and status; nil means the wall clock.
	Clock clock.PassiveClock
	// MaxStreamsPerNode bounds the open streams of one node ID; further
	// streams are refused with ResourceExhausted (default 10 000).
	MaxStreamsPerNode int
	// MaxConnections bounds the open connections of each listener
	// BoundListener wraps (default DefaultMaxConnections).
	MaxConnections int
	// MaxConnectionsSetting names the setting that chose MaxConnections
	// (a flag, a config field) in the log line about refused connections.
	MaxConnectionsSetting string
}

// DefaultMaxStreamsPerNode is Options.MaxStreamsPerNode's default.
const DefaultMaxStreamsPerNode = 10000

// Server is legate's ADS server. It serves one snapshot per node ID over
// state-of-the-world and delta ADS, encoding every resource of a (type,
// version) once and sharing the bytes between all streams, and tracks every
// stream's ACKs and NACKs by nonce. Its methods are safe for concurrent use.
type Server struct {
	opts      Options
	metrics   *metrics
	streamSeq atomic.Uint64
	// authEpoch counts Reauthorize calls: a stream rechecks its right
	// when the epoch it checked under is not the current one.
	authEpoch atomic.Uint64
	// pushes runs the streams' pushes on a few shared goroutines.
	pushes pushQueue
	// sendTimeout is the package's, read once when the server is made, so
	// that a test that changes the package's does not race the pushes of
	// a server still running from an earlier test.
	sendTimeout time.Duration

	mu    sync.Mutex
	nodes map[string]*nodeState
}

// nodeState is one node ID: its current snapshot and its open streams.
type nodeState struct {
	snap  atomic.Pointer[nodeSnapshot]
	setMu sync.Mutex // serializes SetSnapshot for the node

	// guarded by Server.mu
	streams map[*streamBase]struct{}
	hasSnap bool
}

// nodeSnapshot is a Snapshot with every type prepared for sending.
type nodeSnapshot struct {
	version string
	owner   string
	types   map[string]*preparedType
	// candidate is served instead to the streams whose bucket is below
	// share (a rollout in progress); nil otherwise.
	candidate *nodeSnapshot
	share     int
}

var emptyTypes sync.Map // type URL -> *preparedType

// prepareSnapshot prepares snap's types, reusing those of the earlier
// snapshots given whose version is the same.
func prepareSnapshot(snap Snapshot, reuse ...*nodeSnapshot) *nodeSnapshot {
	next := &nodeSnapshot{version: snap.Version, owner: snap.Owner, types: make(map[string]*preparedType, len(snap.Types))}
next:
	for url, ts := range snap.Types {
		for _, old := range reuse {
			if old == nil {
				continue
			}
			if pt, ok := old.types[url]; ok && pt.version == ts.Version {
				next.types[url] = pt
				continue next
			}
		}
		next.types[url] = prepareType(url, ts.Version, ts.Resources)
	}
	return next
}

func (ns *nodeSnapshot) candidateOrNil() *nodeSnapshot {
	if ns == nil {
		return nil
	}
	return ns.candidate
}

// forBucket is the snapshot a stream in bucket is served: the candidate
// when a rollout takes the bucket, the snapshot itself otherwise.
func (ns *nodeSnapshot) forBucket(bucket func() int) *nodeSnapshot {
	if ns == nil || ns.candidate == nil || ns.share <= 0 {
		return ns
	}
	if ns.share >= rollout.Buckets || rollout.InShare(bucket(), ns.share) {
		return ns.candidate
	}
	return ns
}

// typ returns the prepared type, an empty set for a type the snapshot
// leaves out, or nil when there is no snapshot.
func (ns *nodeSnapshot) typ(url string) *preparedType {
	if ns == nil {
		return nil
	}
	if pt, ok := ns.types[url]; ok {
		return pt
	}
	if pt, ok := emptyTypes.Load(url); ok {
		return pt.(*preparedType)
	}
	pt, _ := emptyTypes.LoadOrStore(url, emptyType(url))
	return pt.(*preparedType)
}

// New returns a Server. It fails only when the metrics cannot be registered.
func New(opts Options) (*Server, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	if opts.MaxStreamsPerNode <= 0 {
		opts.MaxStreamsPerNode = DefaultMaxStreamsPerNode
	}
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = DefaultMaxConnections
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	return &Server{
		opts: opts, metrics: m, nodes: make(map[string]*nodeState),
		pushes: pushQueue{slow: slowPush}, sendTimeout: sendTimeout,
	}, nil
}

// NewGRPCServer returns a gRPC server with the ADS service registered and
// the codec that writes pre-encoded responses without copying them. Other
// services may be registered on it too; their messages use the ordinary
// proto codec. Stop it with Stop (ADS streams are long-lived, so
// GracefulStop waits for every proxy to go away). Its limits (see
// serverLimits) come first, so options given here override them.
func (s *Server) NewGRPCServer(opts ...grpc.ServerOption) *grpc.Server {
	opts = append(append(serverLimits(), opts...), grpc.ForceServerCodecV2(newCodec()))
	gs := grpc.NewServer(opts...)
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(gs, adsService{s: s})
	return gs
}

// NewTransport returns the lean transport (xds/transport) with the ADS
// service registered: one goroutine per connection and one per stream,
// responses written to the socket by whoever sends them, with the same
// limits as NewGRPCServer's. tlsConfig nil serves cleartext HTTP/2.
// Stop it with Stop.
func (s *Server) NewTransport(tlsConfig *tls.Config) *transport.Server {
	ts := transport.New(transport.Config{
		TLS:                  tlsConfig,
		MaxConcurrentStreams: maxStreamsPerConn,
		MaxRecvMsgSize:       maxRequestBytes,
		ReceiveWindow:        receiveWindow,
		HandshakeTimeout:     handshakeTimeout,
		WriteTimeout:         s.sendTimeout,
		PingAfter:            pingAfter,
		PingTimeout:          pingTimeout,
		MinPingInterval:      minPingInterval,
		Log:                  s.opts.Log,
	})
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(ts, adsService{s: s})
	return ts
}

// SetSnapshot makes snap the configuration served to node and pushes the
// types whose versions changed to every stream of the node, in ADS order. It
// returns an error, and changes nothing, when snap is not Consistent.
func (s *Server) SetSnapshot(node string, snap Snapshot) error {
	if err := snap.Consistent(); err != nil {
		return fmt.Errorf("snapshot %s of node %q is inconsistent: %w", snap.Version, node, err)
	}
	if c := snap.Candidate; c != nil {
		if err := c.Consistent(); err != nil {
			return fmt.Errorf("candidate snapshot %s of node %q is inconsistent: %w", c.Version, node, err)
		}
		if c.Version == snap.Version || c.Candidate != nil {
			return fmt.Errorf("candidate snapshot %s of node %q must have a version of its own and no candidate", c.Version, node)
		}
	}
	ns := s.node(node, true)
	ns.setMu.Lock()
	old := ns.snap.Load()
	next := prepareSnapshot(snap, old)
	if snap.Candidate != nil {
		// A type the candidate shares with the stable snapshot (same
		// version) is prepared once for both.
		next.candidate = prepareSnapshot(*snap.Candidate, next, old, old.candidateOrNil())
		next.share = snap.CandidateShare
	}
	ns.snap.Store(next)
	ns.setMu.Unlock()

	s.mu.Lock()
	ns.hasSnap = true
	for st := range ns.streams {
		st.notify()
	}
	s.mu.Unlock()
	return nil
}

// Reauthorize makes every stream run the Recheck option again before it
// sends or counts anything more, for a change of rights that comes with
// no new snapshot (an owner's sharing withdrawn, say). It never blocks.
func (s *Server) Reauthorize() {
	s.authEpoch.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ns := range s.nodes {
		for st := range ns.streams {
			st.notify()
		}
	}
}

// Proxies returns the status of every open stream of node, sorted by proxy
// identity and connection time.
func (s *Server) Proxies(node string) []ProxyStatus {
	s.mu.Lock()
	var trackers []*tracker
	if ns := s.nodes[node]; ns != nil {
		for st := range ns.streams {
			trackers = append(trackers, st.tr)
		}
	}
	s.mu.Unlock()
	out := make([]ProxyStatus, 0, len(trackers))
	for _, tr := range trackers {
		out = append(out, tr.status())
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Proxy != out[j].Proxy {
			return out[i].Proxy < out[j].Proxy
		}
		return out[i].ConnectedSince.Before(out[j].ConnectedSince)
	})
	return out
}

// ConnectedNodes returns the node IDs with at least one open stream, in
// no particular order: the read API lists those nothing configures.
func (s *Server) ConnectedNodes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.nodes))
	for id, ns := range s.nodes {
		if len(ns.streams) > 0 {
			out = append(out, id)
		}
	}
	return out
}

// Streams counts the open streams of every node.
func (s *Server) Streams() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ns := range s.nodes {
		n += len(ns.streams)
	}
	return n
}

// node returns the state of a node ID, creating it when create is set.
func (s *Server) node(id string, create bool) *nodeState {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := s.nodes[id]
	if ns == nil && create {
		ns = &nodeState{streams: make(map[*streamBase]struct{})}
		s.nodes[id] = ns
	}
	return ns
}

// register adds a stream to its node. A stream whose proxy name another
// open stream of the node already uses gets the stream number appended, so
// two streams never answer for each other (the name is chosen by the
// client). A node that already has MaxStreamsPerNode open streams refuses
// the stream.
func (s *Server) register(id string, st *streamBase, seq uint64) (*nodeState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := s.nodes[id]
	if ns == nil {
		ns = &nodeState{streams: make(map[*streamBase]struct{})}
		s.nodes[id] = ns
	}
	if len(ns.streams) >= s.opts.MaxStreamsPerNode {
		return nil, status.Errorf(codes.ResourceExhausted, "node %q already has %d open streams, the most this server accepts", id, len(ns.streams))
	}
	for other := range ns.streams {
		if other.tr.proxy == st.tr.proxy {
			st.tr.proxy += "#" + strconv.FormatUint(seq, 10)
			break
		}
	}
	ns.streams[st] = struct{}{}
	s.metrics.connected.WithLabelValues(render.NodeLabel(id)).Inc()
	return ns, nil
}

// unregister forgets a stream, and its node (with its metric series) when
// nothing else holds it.
func (s *Server) unregister(id string, st *streamBase) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := s.nodes[id]
	if ns == nil {
		return
	}
	if _, ok := ns.streams[st]; !ok {
		return
	}
	delete(ns.streams, st)
	s.metrics.connected.WithLabelValues(render.NodeLabel(id)).Dec()
	if len(ns.streams) == 0 && !ns.hasSnap {
		delete(s.nodes, id)
		s.metrics.connected.DeleteLabelValues(render.NodeLabel(id))
	}
}

func (s *Server) emit(ev Event) {
	if s.opts.Observer != nil {
		s.opts.Observer.ObserveProxy(ev)
	}
}

// adsService adapts Server to the generated ADS service interface.
type adsService struct {
	discoveryv3.UnimplementedAggregatedDiscoveryServiceServer
	s *Server
}

func (a adsService) StreamAggregatedResources(stream discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	return a.s.runSotW(stream)
}

func (a adsService) DeltaAggregatedResources(stream discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	return a.s.runDelta(stream)
}
