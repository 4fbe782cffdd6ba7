package revisions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
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
	e.phase.Lock()
	defer e.phase.Unlock()
	e.mu.Lock()
	restored := e.restored
	e.restored, e.following = true, true
	e.mu.Unlock()
	if restored {
		return errors.New("revisions engine already restored")
	}
	return e.mirror(ctx, data)
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
	e.mu.Lock()
	following := e.following
	e.mu.Unlock()
	if !following {
		return nil // a leader makes no node of what it is told
	}
	return e.mirror(context.Background(), []NodeData{d})
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
	// The decisions (Apply, …) wait until every node is judged again.
	e.phase.Lock()
	defer e.phase.Unlock()
	e.mu.Lock()
	following := e.following
	e.mu.Unlock()
	if !following {
		return nil
	}
	err = e.mirror(ctx, data)
	e.mu.Lock()
	e.following = false
	nodes := make([]*nodeState, 0, len(e.nodes))
	for _, n := range e.nodes {
		nodes = append(nodes, n)
	}
	e.mu.Unlock()
	for _, n := range nodes {
		err = errors.Join(err, e.leadNode(ctx, n.rec.Node))
	}
	return err
}

// leadNode decides again about one node the last leader left.
func (e *Engine) leadNode(ctx context.Context, id string) error {
	n, release := e.lockNode(ctx, id, false)
	defer release()
	if n == nil {
		return nil
	}
	now := e.clock.Now()
	if n.mirrorPending {
		// What the last leader published could not be served here:
		// decide again, as after a restart.
		n.mirrorPending = false
		e.reconcile(n, now, true, false)
		return e.commit(ctx, n, nil)
	}
	// The last leader may have stored a taint and died before its
	// rollback was stored: the publish rule decides again (nothing is
	// published when its choice is what is served).
	gen := n.rec.Generation
	e.reconcile(n, now, false, false)
	if n.rec.Generation != gen {
		return e.commit(ctx, n, nil)
	}
	n.verdict = verdictPending
	e.evaluate(ctx, n, now)
	return nil
}

// mirror serves data's nodes as stored, one node at a time, while the
// engine follows (or is taking the lead).
func (e *Engine) mirror(ctx context.Context, data []NodeData) error {
	var errs []error
	for _, d := range data {
		n, release := e.lockNode(ctx, d.Record.Node, true)
		if e.following {
			if err := e.mirrorNode(n, d); err != nil {
				errs = append(errs, err)
			}
		}
		release()
	}
	return errors.Join(errs...)
}

// mirrorNode serves d as stored. Called with n.op and mu held; mu is
// released while the Publisher works.
func (e *Engine) mirrorNode(n *nodeState, d NodeData) error {
	now := e.clock.Now()
	if d.Record.Revision != 0 && d.Record.Revision <= n.rec.Revision && !n.mirrorPending {
		return nil
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
		return nil
	}
	split := splitOf(n.rec)
	if n.track.version == n.rec.Version && n.mirroredSplit == split && !n.mirrorPending {
		e.settle(n)
		return nil
	}
	pub, err := PublicationOf(n.rec, n.revs[n.rec.Published])
	if rr := n.rec.Rollout; err == nil && rr.Active() && rr.Status.Share > 0 && n.revs[rr.Status.Candidate] != nil {
		// The leader's rollout: serve the same split.
		cp := publication(n.rec.Owner, n.revs[rr.Status.Candidate].Config, rr.Version, rr.Types)
		pub.Candidate, pub.CandidateShare = &cp, rr.Status.Share
	}
	if err == nil {
		err = e.publish(n.rec.Node, pub)
	}
	n.mirroredSplit = split
	n.mirrorPending = err != nil
	if err != nil {
		return fmt.Errorf("serve node %q as the leader published it: %w", n.rec.Node, err)
	}
	if n.track.version != n.rec.Version {
		n.track.reset(n.rec.Version, now)
		n.verdict = verdictPending
	}
	if rr := n.rec.Rollout; rr.Active() && n.track.candidate != rr.Version {
		n.track.startCandidate(rr.Version)
	}
	e.settle(n)
	return nil
}

// splitOf names the rollout split a record asks to serve ("" for none).
func splitOf(rec NodeRecord) string {
	if rr := rec.Rollout; rr.Active() && rr.Status.Share > 0 {
		return rr.Version + "/" + strconv.Itoa(rr.Status.Share)
	}
	return ""
}

// retryMirror serves again, on a follower's tick, a publication it could
// not serve (a Secret not read yet). Called with n.op and mu held.
func (e *Engine) retryMirror(n *nodeState) {
	if !n.mirrorPending {
		return
	}
	data := NodeData{Record: n.rec}
	for _, r := range n.revs {
		data.Revisions = append(data.Revisions, r)
	}
	if err := e.mirrorNode(n, data); err != nil {
		e.log.V(1).Info("a published revision still cannot be served here", "node", n.rec.Node, "error", err.Error())
	}
}
