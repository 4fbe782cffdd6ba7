package xds

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/legate-dev/legate/logging"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/sources"
)

// podNameKey is the node metadata key naming the proxy's pod.
const podNameKey = "pod_name"

// streamBase is what state-of-the-world and delta streams share: the
// proxy's identity, its tracker and its registration with the node.
type streamBase struct {
	srv  *Server
	ctx  context.Context
	ss   grpc.ServerStream
	kind string
	// end ends the stream with an error's status from a push worker; nil
	// where the transport cannot (see streamEnder), and then errc carries
	// the error to the handler.
	end  func(error)
	errc chan error

	// queued is set while the stream waits in its server's push queue;
	// guarded by the queue's mutex.
	queued bool

	// mu is held while a request or a push is handled: everything below
	// belongs to whoever holds it, and only its holder sends on ss.
	mu sync.Mutex
	// closed is set when the stream's handler returned or is about to,
	// failed when a push ended the stream, with the error that did.
	closed bool
	failed error
	// pushAll and order are the stream's own (state-of-the-world or delta)
	// way of sending what a snapshot changed and its types in ADS order.
	pushAll func() error
	order   func() []string

	nodeID string
	ns     *nodeState
	tr     *tracker
	// pushed is the newest snapshot every subscribed type was compared
	// with; current is the snapshot version the stream last sent a response
	// from, or last reported the proxy's standing towards (see settle).
	pushed  *nodeSnapshot
	current string
	// allowed is the snapshot, and authEpoch the epoch, of the stream's
	// last successful Recheck.
	allowed   *nodeSnapshot
	authEpoch uint64
	checked   bool
	// tenant is the tenant the proxy's credentials name (Options.Tenant),
	// taken when the stream starts and put on each of its events.
	tenant string
	// bucket is the proxy's rollout bucket (rollout.ProxyBucket), taken
	// when the stream starts: it decides which side of a rollout's split
	// the stream is served, the same on every replica and after a
	// reconnect.
	bucket int
}

// recheck asks the Recheck option whether the stream may receive snap
// (the node's current snapshot when it is about to push, or to count an
// answer), once per snapshot and Reauthorize epoch. An error ends the
// stream with PermissionDenied.
func (b *streamBase) recheck(snap *nodeSnapshot) error {
	check := b.srv.opts.Recheck
	if check == nil || !b.started() {
		return nil
	}
	epoch := b.srv.authEpoch.Load()
	if b.checked && b.allowed == snap && b.authEpoch == epoch {
		return nil
	}
	var owner string
	if snap != nil {
		owner = snap.owner
	}
	if err := check(b.ctx, b.nodeID, owner); err != nil {
		b.srv.metrics.revoked.Inc()
		logging.Warn(b.srv.opts.Log, "stream closed: it may no longer receive its node", "node", b.nodeID, "proxy", b.tr.proxy, "reason", err.Error())
		return status.Errorf(codes.PermissionDenied, "node %q is not served to this proxy any more: %v", b.nodeID, err)
	}
	b.allowed, b.authEpoch, b.checked = snap, epoch, true
	return nil
}

// snapshot is the node's current snapshot; nil before the stream started
// or before the node has one.
func (b *streamBase) snapshot() *nodeSnapshot {
	if b.ns == nil {
		return nil
	}
	return b.ns.snap.Load().forBucket(b.bucketOf)
}

func (b *streamBase) bucketOf() int { return b.bucket }

// pushedOne notes that a request's type was compared with snap; with one
// subscribed type that means every type was.
func (b *streamBase) pushedOne(snap *nodeSnapshot, subscribed int) {
	if b.pushed == nil && subscribed == 1 {
		b.comparedWith(snap)
	}
}

// comparedWith notes that every subscribed type was compared with snap.
func (b *streamBase) comparedWith(snap *nodeSnapshot) {
	b.pushed = snap
	if snap == nil || b.tr == nil {
		return
	}
	b.tr.mu.Lock()
	b.tr.compared = snap.version
	b.tr.mu.Unlock()
}

func newStreamBase(srv *Server, ss grpc.ServerStream, kind string) streamBase {
	return streamBase{srv: srv, ctx: ss.Context(), ss: ss, kind: kind, end: newStreamEnder(ss.Context())}
}

// notify has a push worker look at the node's newest snapshot for the
// stream; it never blocks.
func (b *streamBase) notify() { b.srv.pushes.add(b) }

func (b *streamBase) started() bool { return b.tr != nil }

// start identifies the proxy from the first request of the stream, checks
// it with the Authorizer and registers the stream with its node.
func (b *streamBase) start(node *corev3.Node) error {
	if node.GetId() == "" {
		return status.Error(codes.InvalidArgument, "the first request of a stream must carry node.id")
	}
	if len(node.GetId()) > render.MaxNodeIDLength {
		return status.Errorf(codes.InvalidArgument, "node.id is %d bytes, over the limit of %d", len(node.GetId()), render.MaxNodeIDLength)
	}
	var identity string
	if a := b.srv.opts.Authorizer; a != nil {
		id, err := a(b.ctx, node.GetId())
		if err != nil {
			return status.Errorf(codes.PermissionDenied, "node %q is not allowed: %v", node.GetId(), err)
		}
		identity = boundText(id, maxPodName, "")
	}
	seq := b.srv.streamSeq.Add(1)
	proxy := proxyName(identity, boundText(node.GetMetadata().GetFields()[podNameKey].GetStringValue(), maxPodName, ""))
	if proxy == "" {
		proxy = "stream-" + strconv.FormatUint(seq, 10)
	}
	tr := newTracker(proxy, node.GetId(), b.kind, b.srv.opts.Clock.Now())
	tr.peer = describePeer(b.ctx, identity, node)
	b.tr = tr
	b.bucket = rollout.ProxyBucket(identity, boundText(node.GetMetadata().GetFields()[podNameKey].GetStringValue(), maxPodName, ""), node.GetId(), tr.peer.address)
	ns, err := b.srv.register(node.GetId(), b, seq)
	if err != nil {
		b.tr = nil
		return err
	}
	b.nodeID, b.ns = node.GetId(), ns
	if tenant := b.srv.opts.Tenant; tenant != nil {
		b.tenant = tenant(b.ctx)
	}
	b.srv.emit(Event{Kind: Connected, Node: b.nodeID, Proxy: proxy, Tenant: b.tenant, Bucket: b.bucket, Time: b.tr.since})
	return nil
}

// stop drops everything the server held for the stream.
func (b *streamBase) stop() {
	if b.tr == nil {
		return
	}
	b.srv.unregister(b.nodeID, b)
	b.tr.mu.Lock()
	outstanding := b.tr.outstandingLocked()
	b.tr.mu.Unlock()
	b.srv.emit(Event{Kind: Disconnected, Node: b.nodeID, Proxy: b.tr.proxy, Tenant: b.tenant, Outstanding: outstanding, Time: b.srv.opts.Clock.Now()})
}

// answered records the ACK or NACK carried by a request, if its nonce names
// a response of this stream. It returns the response, whether one was
// found, and whether the nonce is the type's latest.
func (b *streamBase) answered(typeURL, nonce string, detail *statuspb.Status) (sent, bool, bool) {
	var msg *string
	if detail != nil {
		// The text reaches logs, statuses, events and the page: whatever
		// in it looks like a credential (a proxy may quote the value it
		// refused) is taken out, after the bound so that a client's
		// megabytes cost no regular-expression time.
		m := boundText(sources.Redact(boundText(detail.GetMessage(), MaxNACKText, "")), MaxNACKText, "")
		if len(detail.GetMessage()) > MaxNACKText {
			m += nackTrimMarker
		}
		msg = &m
	}
	now := b.srv.opts.Clock.Now()
	resp, found, latest, outstanding := b.tr.answer(typeURL, nonce, msg, now)
	if !found {
		return resp, false, latest
	}
	ev := Event{
		Kind: ACK, Node: b.nodeID, Proxy: b.tr.proxy, Tenant: b.tenant, TypeURL: typeURL,
		TypeVersion: resp.version, SnapshotVersion: resp.snapVersion,
		Outstanding: outstanding, Time: now,
	}
	label := shortType(typeURL)
	if msg != nil {
		ev.Kind, ev.Error = NACK, *msg
		b.srv.metrics.nacks.WithLabelValues(label).Inc()
		logging.Warn(b.srv.opts.Log, "proxy rejected a response", "node", b.nodeID, "proxy", b.tr.proxy,
			"type", label, "version", resp.version, "error", *msg)
	} else {
		b.srv.metrics.acks.WithLabelValues(label).Inc()
	}
	b.srv.emit(ev)
	return resp, true, latest
}

// send writes a pre-encoded response built from snapshot snapVersion and
// counts it.
func (b *streamBase) send(typeURL, snapVersion string, parts [][]byte) error {
	// A proxy that stops reading leaves SendMsg waiting for flow-control
	// credit for ever, holding the stream's lock and whichever push worker
	// sent: a few such streams would hold every worker and stall the
	// pushes of every node. The stream is ended instead.
	var stalled atomic.Bool
	if b.end != nil {
		timer := time.AfterFunc(b.srv.sendTimeout, func() {
			stalled.Store(true)
			b.end(errStalled)
		})
		defer timer.Stop()
	}
	if err := b.ss.SendMsg(&wireMsg{parts: parts}); err != nil {
		if stalled.Load() {
			return errStalled
		}
		return err
	}
	b.current = snapVersion
	b.srv.metrics.responses.WithLabelValues(shortType(typeURL)).Inc()
	return nil
}

// settle reports the proxy's standing towards snap when the stream sent it
// no response built from snap, because nothing it subscribes to changed.
// Without this report the revision engine would wait for an answer that
// never comes. Once no response is outstanding, the proxy is reported as
// having rejected snap (a NACK carrying its last error text) when a type it
// subscribes to is served in a version it rejected, and as current (an ACK
// with no type) otherwise. The streams call it after every push and every
// request; it reports each snapshot at most once.
func (b *streamBase) settle(types []string) {
	snap := b.pushed
	if snap == nil || snap != b.snapshot() || b.current == snap.version {
		// Nothing compared yet, or a newer snapshot is on its way: the push
		// it wakes will settle.
		return
	}
	ev := Event{Kind: ACK, Node: b.nodeID, Proxy: b.tr.proxy, Tenant: b.tenant, SnapshotVersion: snap.version, Time: b.srv.opts.Clock.Now()}
	b.tr.mu.Lock()
	if b.tr.outstandingLocked() > 0 {
		// Answers still due may be NACKs of content snap keeps: wait.
		b.tr.mu.Unlock()
		return
	}
	for _, url := range types {
		pt := snap.typ(url)
		tt := b.tr.types[url]
		if tt == nil || !slices.Contains(tt.rejected, pt.version) {
			continue
		}
		ev.Kind, ev.TypeURL, ev.TypeVersion = NACK, url, pt.version
		if tt.status.LastNACK != nil {
			ev.Error = tt.status.LastNACK.Error
		}
		break
	}
	b.tr.mu.Unlock()
	b.current = snap.version
	b.srv.emit(ev)
}

// serveStream is the loop of one ADS stream, state-of-the-world or delta.
// Requests are handled on the handler's goroutine, which reads them, and
// snapshot wake-ups on the server's push workers (see pushQueue), one at a
// time under b.mu; after each the stream settles what it owes the engine
// for its subscribed types (order returns them in ADS order).
//
// A stream costs one goroutine of its own, gRPC's handler, where it used to
// cost two (the handler waiting for pushes, and a receiver): with 10 000
// proxies the second goroutine, its channel and closure were about 1 KiB of heap
// a stream, and a push grew the stack of every stream's handler (SendMsg
// is deep) all at once; now only the pushers' stacks grow. The handler
// itself needs an 8 KiB stack where the two needed 4 KiB each: gRPC's
// frames below it and Recv's above do not fit in 4 KiB. A push
// that must end the stream (PermissionDenied after a Recheck, a failed
// send) ends it with its status through the transport stream
// (streamEnder), which wakes the handler from Recv; where the transport
// offers no such call, the stream falls back to a receiver goroutine and a
// handler that waits for either side's error.
func serveStream[Req any](b *streamBase, recv func() (Req, error), handle func(Req) error, pushAll func() error, order func() []string) error {
	b.mu.Lock()
	b.pushAll, b.order = pushAll, order
	b.mu.Unlock()
	defer func() {
		// Once the handler returns, gRPC forbids sending on the stream:
		// wait for a request or a push being handled and stop the push
		// workers (and a fallback receiver) from handling more.
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
	}()
	if b.end == nil {
		b.errc = make(chan error, 2)
		go receive(b, recv, handle, order, b.errc)
		select {
		case <-b.ctx.Done():
			return nil
		case err := <-b.errc:
			return err
		}
	}
	for {
		req, err := recv()
		if err != nil {
			b.mu.Lock()
			failed := b.failed
			b.mu.Unlock()
			if failed != nil {
				// A push ended the stream, which is why recv failed.
				return failed
			}
			if errors.Is(err, io.EOF) || b.ctx.Err() != nil {
				// The client half-closed or went away: nothing to report.
				return nil
			}
			return err
		}
		if err := handleLocked(b, req, handle, order); err != nil {
			return err
		}
	}
}

// handleLocked handles one request under b.mu. Once a push ended the
// stream it returns the push's error instead.
func handleLocked[Req any](b *streamBase, req Req, handle func(Req) error, order func() []string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		if b.failed != nil {
			return b.failed
		}
		return status.Error(codes.Canceled, "the stream is closing")
	}
	err := handle(req)
	if err == nil {
		b.settle(order())
	}
	return err
}

// pushQueued runs on a push worker: it sends what the node's newest
// snapshot changed, after checking that the stream may still receive its
// node, and ends the stream when either fails.
func (b *streamBase) pushQueued() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.pushAll == nil {
		return
	}
	err := b.recheck(b.snapshot())
	if err == nil {
		err = b.pushAll()
	}
	if err == nil {
		b.settle(b.order())
		return
	}
	// Nothing more may be sent: the handler returns err as soon as it sees
	// it (from Recv, woken by the end of the stream, or from errc).
	b.closed, b.failed = true, err
	if b.end != nil {
		b.end(err)
		return
	}
	b.errc <- err
}

// newStreamEnder is streamEnder; tests replace it to run the fallback.
var newStreamEnder = streamEnder

// streamEnder returns a function that ends the stream of ctx with the
// status of an error, from outside the stream's handler, or nil when the
// transport offers none. grpc-go's HTTP/2 transport stream has WriteStatus,
// which gRPC itself calls when a handler returns: it sends the status,
// ends the stream and cancels its context, so that a Recv blocked on the
// handler's goroutine returns; the status the handler then returns is not
// sent again.
func streamEnder(ctx context.Context) func(error) {
	w, ok := grpc.ServerTransportStreamFromContext(ctx).(interface {
		WriteStatus(*status.Status) error
	})
	if !ok {
		return nil
	}
	return func(err error) {
		st, ok := status.FromError(err)
		if !ok {
			// What gRPC makes of a handler's error that carries no status.
			st = status.FromContextError(err)
		}
		_ = w.WriteStatus(st)
	}
}

// receive reads and handles requests until recv or handle fails, or the
// stream's handler has returned; it runs on a goroutine of its own only
// where the stream cannot be ended from a push worker (see serveStream).
// The error is delivered on errc; io.EOF (the client closed its side)
// becomes nil.
func receive[T any](b *streamBase, recv func() (T, error), handle func(T) error, order func() []string, errc chan<- error) {
	for {
		req, err := recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			errc <- err
			return
		}
		if err := handleLocked(b, req, handle, order); err != nil {
			errc <- err
			return
		}
	}
}

// sendTimeout bounds how long one response may wait for the proxy to
// read it (a var for tests). Where the transport cannot end a stream from
// outside (see streamEnder) there is no bound.
var sendTimeout = 30 * time.Second

// errStalled ends a stream whose proxy read nothing for sendTimeout.
var errStalled = status.Errorf(codes.DeadlineExceeded, "the proxy read nothing of a response for %s", sendTimeout)

// typeBound refuses a stream's subscription to one more resource type
// when it has n already.
func typeBound(n int) error {
	if n >= maxTypesPerStream {
		return status.Errorf(codes.InvalidArgument, "a stream subscribes to at most %d resource types", maxTypesPerStream)
	}
	return nil
}
