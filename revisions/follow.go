package revisions

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// ErrNotLeader is returned by the methods that decide (Apply, ClearTaint)
// while the engine follows another replica.
var ErrNotLeader = errors.New("this replica follows the leader: only the leader decides")

// Several replicas share one store: the leader decides (applies content,
// judges publications, taints and rolls back) and writes; the followers
// serve exactly what the store says is published, under the leader's
// versions, and gather their own proxies' answers for the leader
// (LocalAnswers → the leader's ObserveRemote). An engine starts as a
// follower with Follow, serves the store with Mirror, and becomes the
// leader with Lead, which reads the store once more and goes on from it:
// no publication is made twice, no taint is lost.

// Follow makes a new engine a follower: instead of Restore, it loads the
// store and serves every node's publication as stored. Call it once,
// before Run.
func (e *Engine) Follow(ctx context.Context) error {
	data, err := e.store.Load(ctx)
	if err != nil {
		return fmt.Errorf("load revisions from the store: %w", err)
	}
	defer e.unlock()
	e.mu.Lock()
	if e.restored {
		return errors.New("revisions engine already restored")
	}
	e.restored, e.following = true, true
	return e.mirrorLocked(data)
}

// Leading reports whether the engine decides (it was restored, or it led
// after following).
func (e *Engine) Leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.restored && !e.following
}

// Mirror serves what the store holds for one node, as the leader wrote it:
// its record and revisions replace the engine's, and the publication is
// served under the record's versions. A record not newer than the one
// mirrored is ignored, and so is any record once the engine leads.
func (e *Engine) Mirror(d NodeData) error {
	defer e.unlock()
	e.mu.Lock()
	if !e.following {
		return nil
	}
	return e.mirrorLocked([]NodeData{d})
}

// Mirrored reports whether the engine already holds node's record at
// revision rev or newer, so a follower need not read the node again.
func (e *Engine) Mirrored(node string, rev uint64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := e.nodes[node]
	return n != nil && rev != 0 && n.rec.Revision >= rev && !n.mirrorPending
}

// Lead makes a follower the leader: it reads the store again (the last
// leader's last writes), then judges every node from there, its own
// proxies' answers and the other replicas' summaries together. A
// publication in place stays in place under its versions.
func (e *Engine) Lead(ctx context.Context) error {
	data, err := e.store.Load(ctx)
	if err != nil {
		return fmt.Errorf("load revisions from the store: %w", err)
	}
	defer e.unlock()
	e.mu.Lock()
	if !e.following {
		return nil
	}
	err = e.mirrorLocked(data)
	e.following = false
	now := e.clock.Now()
	for _, n := range e.nodes {
		if n.mirrorPending {
			// What the last leader published could not be served here:
			// decide again, as after a restart.
			n.mirrorPending = false
			e.reconcile(n, now, true, false)
			if cerr := e.commit(ctx, n, nil); cerr != nil {
				err = errors.Join(err, cerr)
			}
			continue
		}
		// The last leader may have stored a taint and died before its
		// rollback was stored: the publish rule decides again (nothing is
		// published when its choice is what is served).
		gen := n.rec.Generation
		e.reconcile(n, now, false, false)
		if n.rec.Generation != gen {
			if cerr := e.commit(ctx, n, nil); cerr != nil {
				err = errors.Join(err, cerr)
			}
			continue
		}
		n.verdict = verdictPending
		e.evaluate(ctx, n, now)
	}
	return err
}

// mirrorLocked serves data's nodes as stored. Called with mu held.
func (e *Engine) mirrorLocked(data []NodeData) error {
	now := e.clock.Now()
	var errs []error
	for _, d := range data {
		n := e.nodeFor(d.Record.Node)
		if d.Record.Revision != 0 && d.Record.Revision <= n.rec.Revision && !n.mirrorPending {
			continue
		}
		n.rec = d.Record
		n.rec.History = slices.Clone(d.Record.History)
		clear(n.revs)
		for _, r := range d.Revisions {
			if slices.Contains(n.rec.History, r.Hash) {
				n.revs[r.Hash] = r
			}
		}
		n.rec.History = slices.DeleteFunc(n.rec.History, func(h string) bool { return n.revs[h] == nil })
		n.base = choose(n.candidates(nil)).State
		n.waiting = nil
		if n.rec.Published == "" || n.revs[n.rec.Published] == nil {
			n.track.reset("", now)
			e.settle(n)
			continue
		}
		if n.track.version == n.rec.Version && !n.mirrorPending {
			e.settle(n)
			continue
		}
		pub, err := PublicationOf(n.rec, n.revs[n.rec.Published])
		if err == nil {
			err = e.publisher.Publish(n.rec.Node, pub)
		}
		n.mirrorPending = err != nil
		if err != nil {
			errs = append(errs, fmt.Errorf("serve node %q as the leader published it: %w", n.rec.Node, err))
			continue
		}
		n.track.reset(n.rec.Version, now)
		n.verdict = verdictPending
		e.settle(n)
	}
	return errors.Join(errs...)
}

// retryMirror serves again, on a follower's tick, the publications it
// could not serve (a Secret not read yet). Called with mu held.
func (e *Engine) retryMirror() {
	for _, n := range e.nodes {
		if !n.mirrorPending {
			continue
		}
		data := NodeData{Record: n.rec}
		for _, r := range n.revs {
			data.Revisions = append(data.Revisions, r)
		}
		if err := e.mirrorLocked([]NodeData{data}); err != nil {
			e.log.V(1).Info("a published revision still cannot be served here", "node", n.rec.Node, "error", err.Error())
		}
	}
}

// maxSummaryRejections bounds the rejections a replica's summary of one
// node carries (the counts stay whole).
const maxSummaryRejections = 5

// LocalAnswers summarises, per node with a publication in place, how this
// replica's own proxies answered it: what a follower sends the leader.
// Only nodes with a proxy here, or a rejection kept, are listed.
func (e *Engine) LocalAnswers() map[string]RemoteAnswers {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]RemoteAnswers{}
	for id, n := range e.nodes {
		if n.track.version == "" {
			continue
		}
		t := n.track.tally()
		if t.Population == 0 {
			continue
		}
		rej := n.track.rejections()
		out[id] = RemoteAnswers{
			Version: n.track.version, Population: t.Population, Accepted: t.Accepted, Rejected: t.Rejected,
			Rejections: rej[:min(len(rej), maxSummaryRejections)],
		}
	}
	return out
}

// SameAnswers reports whether two summaries say the same.
func SameAnswers(a, b RemoteAnswers) bool {
	return a.Version == b.Version && a.Population == b.Population && a.Accepted == b.Accepted && a.Rejected == b.Rejected &&
		slices.EqualFunc(a.Rejections, b.Rejections, func(x, y ProxyRejection) bool {
			return x.Proxy == y.Proxy && x.Error == y.Error
		})
}
