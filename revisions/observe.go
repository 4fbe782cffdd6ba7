package revisions

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/legate-dev/legate/render"
)

// eventQueue hands proxy events from the xDS server's stream goroutines to
// the engine without blocking them: appending takes a short lock of its own,
// never the engine's.
type eventQueue struct {
	mu     sync.Mutex
	events []ProxyEvent
	wake   chan struct{}
}

func (q *eventQueue) init() { q.wake = make(chan struct{}, 1) }

func (q *eventQueue) push(ev ProxyEvent) {
	q.mu.Lock()
	q.events = append(q.events, ev)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *eventQueue) take() []ProxyEvent {
	q.mu.Lock()
	defer q.mu.Unlock()
	evs := q.events
	q.events = nil
	return evs
}

// ObserveProxy queues what a proxy did; Run applies it. It never blocks on
// the engine, so the xDS server may call it from any goroutine, including
// while it holds its own locks.
func (e *Engine) ObserveProxy(ev ProxyEvent) { e.queue.push(ev) }

// Run applies queued proxy events and checks answer timeouts every
// TickInterval until ctx ends, and then returns ctx.Err(). Run it once,
// after Restore.
func (e *Engine) Run(ctx context.Context) error {
	t := time.NewTicker(e.tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-e.queue.wake:
			e.drain(ctx)
		case <-t.C:
			e.Tick(ctx, e.clock.Now())
		}
	}
}

// Tick judges every publication whose answer timeout has passed at now, and
// tries again the publications that were not ready.
// Run calls it; tests and other drivers may call it with their own clock.
// Store writes it makes end with ctx. A node busy with a decision of its
// own (a store write under way) is left to the next tick rather than
// waited for.
func (e *Engine) Tick(ctx context.Context, now time.Time) {
	e.mu.Lock()
	nodes := make([]*nodeState, 0, len(e.nodes))
	for _, n := range e.nodes {
		nodes = append(nodes, n)
	}
	e.mu.Unlock()
	eachNode(nodes, func(n *nodeState) {
		if ctx.Err() != nil {
			return
		}
		e.mu.Lock()
		if !e.tryLockNode(n) {
			e.mu.Unlock()
			return
		}
		if e.following {
			e.retryMirror(n)
		} else {
			e.evaluate(ctx, n, now)
			e.retryWaiting(ctx, n, now)
		}
		e.releaseNode(ctx, n)
	})
}

// nodeWorkers bounds the nodes that drain and Tick decide at once. A
// decision may write to the store (a taint before its rollback, the
// rollback's record) with only the node's op lock held, so when the
// proxies of many nodes reject their publications together, the rollbacks
// take about nodes/nodeWorkers store round trips rather than one round
// trip per node, one after the other.
const nodeWorkers = 16

// eachNode calls fn for every node, on up to nodeWorkers goroutines, and
// returns when every call has. fn takes the node's locks itself.
func eachNode(nodes []*nodeState, fn func(*nodeState)) {
	if len(nodes) == 1 {
		fn(nodes[0])
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(len(nodes), nodeWorkers) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(nodes)); i = next.Add(1) - 1 {
				fn(nodes[i])
			}
		})
	}
	wg.Wait()
}

// drain applies every queued event, then judges the nodes they touched.
// The events of a node whose op lock another goroutine holds are left to
// that goroutine (releaseNode), in their order, rather than waited for.
func (e *Engine) drain(ctx context.Context) {
	evs := e.queue.take()
	if len(evs) == 0 {
		return
	}
	e.mu.Lock()
	var order []*nodeState
	byNode := map[*nodeState][]ProxyEvent{}
	for _, ev := range evs {
		if ev.Node == "" || ev.Proxy == "" {
			continue
		}
		n := e.nodeFor(ev.Node)
		if byNode[n] == nil {
			order = append(order, n)
		}
		byNode[n] = append(byNode[n], ev)
	}
	e.mu.Unlock()
	eachNode(order, func(n *nodeState) {
		e.mu.Lock()
		evs := byNode[n]
		if e.nodes[n.rec.Node] != n || !n.op.TryLock() {
			// Busy: its holder applies the events before it lets go. (A
			// node dropped meanwhile had no proxy, so its events are
			// reports of streams it no longer has.)
			if e.nodes[n.rec.Node] == n {
				n.deferred = append(n.deferred, evs...)
			}
			e.mu.Unlock()
			return
		}
		e.observe(ctx, n, evs)
		if len(n.rec.History) == 0 && len(n.track.proxies) == 0 && len(n.deferred) == 0 {
			delete(e.nodes, n.rec.Node)
		}
		e.releaseNode(ctx, n)
	})
}

// observe applies one node's events in order and judges the node again.
// Called with n.op and mu held.
func (e *Engine) observe(ctx context.Context, n *nodeState, evs []ProxyEvent) {
	touched := false
	for _, ev := range evs {
		switch {
		case ev.Kind == analysisDone:
			if n.analysisIn(ev) {
				touched = true
			}
			continue
		case ev.Kind == ProxyConnected && n.ro != nil:
			n.countConnect(ev)
		}
		if n.track.observe(ev) {
			touched = true
		}
	}
	if !touched {
		return
	}
	if e.following {
		// A follower keeps its own proxies' answers for the leader;
		// the verdict is the leader's.
		t, _ := n.track.tally(n.ownerTenant()).counted()
		n.verdict = judge(t, e.threshold, false)
		e.settle(n)
		return
	}
	e.evaluate(ctx, n, e.clock.Now())
}

// maxTaintProxies bounds the rejections a taint records (sorted by proxy);
// the message still counts them all.
const maxTaintProxies = 50

// evaluate judges the node's current publication and acts on a new verdict:
// a taint is stored before the rollback is published. Called with n.op and
// mu held.
func (e *Engine) evaluate(ctx context.Context, n *nodeState, now time.Time) {
	if n.track.version == "" {
		return
	}
	if n.rec.Rollout.Active() {
		// The stable revision was judged before the rollout began; what
		// is judged now is the candidate, step by step.
		e.advanceRollout(ctx, n, now)
		return
	}
	t, rej := n.answers()
	v := judge(t, e.threshold, now.Sub(n.track.since) >= e.timeout)
	if v == n.verdict {
		return
	}
	n.verdict = v
	rev := n.revs[n.rec.Published]
	if v == verdictTainted && rev.Taint == nil {
		rev.Taint = &Taint{At: now, Proxies: rej[:min(len(rej), maxTaintProxies)], Message: taintMessage(rej, t.Population)}
		n.changed[rev.Hash] = true
		e.metrics.taints.WithLabelValues(render.NodeLabel(rev.Node)).Inc()
		e.log.Error(nil, "proxies rejected the revision; tainted", "node", rev.Node, "revision", rev.Hash, "commit", rev.Origin.Commit, "message", rev.Taint.Message)
		// Persist the taint before acting on it: a crash after the rollback
		// must not re-publish the rejected revision on restart.
		if err := e.commit(ctx, n, nil); err != nil {
			e.log.Error(err, "could not store a taint; will retry with the next write", "node", rev.Node, "revision", rev.Hash)
		}
		e.reconcile(n, now, false, false)
		if err := e.commit(ctx, n, nil); err != nil {
			e.log.Error(err, "could not store a rollback; will retry with the next write", "node", rev.Node)
		}
		if n.state == StateRollbackFailed {
			e.log.Error(nil, "no untainted revision to roll back to; the rejected revision stays served", "node", rev.Node, "revision", rev.Hash)
		}
		e.emit(Outcome{
			Node: rev.Node, Hash: rev.Hash, Origin: rev.Origin, Status: OutcomeFailure, State: n.state,
			Description: rev.Taint.Message, Rejections: rev.Taint.Proxies, Time: now,
		})
		return
	}
	e.settle(n)
	if (v == verdictAccepted || v == verdictDegraded) && n.announce && !n.finalSent {
		n.finalSent = true
		e.emit(e.outcome(n, rev, OutcomeSuccess, successText(n), now))
	}
}
