package revisions

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/sources"
)

// OutcomeStatus is the feedback for one origin (a commit) on one node.
type OutcomeStatus string

const (
	// OutcomePending: published, waiting for the proxies to answer.
	OutcomePending OutcomeStatus = "pending"
	// OutcomeSuccess: the proxies accepted it (Degraded counts: it stays
	// published; Description says who rejected it).
	OutcomeSuccess OutcomeStatus = "success"
	// OutcomeFailure: validation rejected it, or the proxies (or the xDS
	// server) rejected it and it was rolled back.
	OutcomeFailure OutcomeStatus = "failure"
)

// Outcome is one piece of feedback for a reporter (commit statuses,
// events). For a validation failure Node and Hash are empty and Diagnostics
// holds the renderer's messages.
type Outcome struct {
	Node   string         `json:"node,omitempty"`
	Hash   string         `json:"hash,omitempty"`
	Origin sources.Origin `json:"origin"`
	Status OutcomeStatus  `json:"status"`
	// State is the node's state after the event.
	State State `json:"state,omitempty"`
	// Waiting marks a pending outcome whose revision is not served yet
	// because the home cannot serve it (see NotReady); Description says why.
	Waiting bool `json:"waiting,omitempty"`
	// Rollout marks the feedback of a progressive rollout (a step begun,
	// a step failed, the candidate rolled back): its Description is the
	// whole text for the author, "rolling out, step 2/5 (10% of proxies)",
	// and a reporter says it as it is.
	Rollout bool `json:"rollout,omitempty"`
	// Description is one line for people; for rejections it carries the
	// proxies' own error text.
	Description string              `json:"description"`
	Rejections  []ProxyRejection    `json:"rejections,omitempty"`
	Diagnostics []render.Diagnostic `json:"diagnostics,omitempty"`
	Time        time.Time           `json:"time"`
}

// Subscribe registers fn to receive every Outcome, in the order they
// happen. fn is called from the goroutine that caused the outcome (Apply,
// ClearTaint, RecordValidationFailure or Run) after the engine's lock is
// released; it must return quickly (queue to an Outbox, for example) and
// must not call Apply, ClearTaint, Restore or RecordValidationFailure.
func (e *Engine) Subscribe(fn func(Outcome)) {
	e.subsMu.Lock()
	defer e.subsMu.Unlock()
	e.subs = append(e.subs, fn)
}

// RecordValidationFailure reports that the snapshot from origin failed
// validation: nothing is published, and subscribers get a failure carrying
// the first diagnostics.
func (e *Engine) RecordValidationFailure(origin sources.Origin, diags []render.Diagnostic) {
	defer e.unlock()
	e.mu.Lock()
	e.metrics.validationFailures.WithLabelValues(origin.Source).Inc()
	e.emit(Outcome{
		Origin: origin, Status: OutcomeFailure, Description: diagnosticsSummary(diags, origin.Path),
		Diagnostics: diags, Time: e.clock.Now(),
	})
}

// diagnosticsSummary renders the first diagnostics compiler-style on one
// line, with file names relative to the repository root (the renderer
// sees the tree under the source's path dir), so that the author can open
// the file named.
func diagnosticsSummary(diags []render.Diagnostic, dir string) string {
	const shown = 3
	if len(diags) == 0 {
		return "validation failed"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "validation failed with %d problem", len(diags))
	if len(diags) > 1 {
		b.WriteString("s")
	}
	for i, d := range diags {
		if i == shown {
			fmt.Fprintf(&b, "; and %d more", len(diags)-shown)
			break
		}
		fmt.Fprintf(&b, "; %s: %s", d.Pos.InDir(dir), d.Message)
		if d.Rule != "" {
			fmt.Fprintf(&b, " [%s]", d.Rule)
		}
	}
	return b.String()
}

// emit queues an outcome for delivery when the engine's lock is released.
// Called with mu held.
func (e *Engine) emit(o Outcome) { e.outbound = append(e.outbound, o) }

func (e *Engine) outcome(n *nodeState, rev *Revision, s OutcomeStatus, desc string, now time.Time) Outcome {
	return Outcome{
		Node: rev.Node, Hash: rev.Hash, Origin: rev.Origin, Status: s,
		State: n.state, Description: desc, Time: now,
	}
}

// pendingText says who a published revision waits for.
func pendingText(n *nodeState) string {
	switch c := n.track.connected(); c {
	case 0:
		return "published; no proxy of this node is connected yet"
	case 1:
		return "published, waiting for the 1 connected proxy to answer"
	default:
		return fmt.Sprintf("published, waiting for the %d connected proxies to answer", c)
	}
}

func successText(n *nodeState) string {
	t, rej := n.answers()
	if t.Rejected == 0 {
		return fmt.Sprintf("accepted by %d of %d proxies", t.Accepted, t.Population)
	}
	return "degraded, not rolled back: " + taintMessage(rej, t.Population)
}

// unlock releases mu and delivers the outcomes collected under it, in the
// order they were decided. A batch takes a ticket while mu is still held
// and is delivered once every earlier ticket has been, with no engine lock
// held, so a subscriber may read the engine (Node, Nodes) while another
// goroutine waits for mu. Holding a delivery lock across mu's release would
// invert the lock order against such a subscriber and deadlock.
func (e *Engine) unlock() {
	out := e.outbound
	e.outbound = nil
	moved := e.moved
	e.moved = nil
	var ticket uint64
	if len(out) > 0 {
		ticket = e.tickets
		e.tickets++
	}
	e.mu.Unlock()
	e.deliverMoves(moved)
	if len(out) == 0 {
		return
	}
	e.notifyMu.Lock()
	for e.serving != ticket {
		e.notifyCond.Wait()
	}
	e.notifyMu.Unlock()
	defer func() {
		e.notifyMu.Lock()
		e.serving++
		e.notifyCond.Broadcast()
		e.notifyMu.Unlock()
	}()
	e.subsMu.Lock()
	subs := slices.Clone(e.subs)
	e.subsMu.Unlock()
	for _, o := range out {
		for _, fn := range subs {
			fn(o)
		}
	}
}

// RolloutMove names a node whose rollout moved and the source that owns
// it.
type RolloutMove struct {
	Node, Source string
}

// SubscribeRollouts registers fn to be told of every node whose rollout
// moved: a step began or ended, a gate passed, a command was carried
// out, the rollout ended. It says which node, not how: fn reads the
// engine (Rollout) for that, so a home can have the status of the
// node's object written without polling. fn is called after the
// engine's lock is released, possibly from several goroutines at once
// and more than once per move; it must return quickly and must not call
// Apply, ClearTaint, RolloutCommand or Restore.
func (e *Engine) SubscribeRollouts(fn func(RolloutMove)) {
	e.subsMu.Lock()
	defer e.subsMu.Unlock()
	e.rolloutSubs = append(e.rolloutSubs, fn)
}

// noteRollout queues a move of n's rollout for the rollout subscribers.
// Called with mu held.
func (e *Engine) noteRollout(n *nodeState) {
	e.moved = append(e.moved, RolloutMove{Node: n.rec.Node, Source: n.rec.Owner})
}

func (e *Engine) deliverMoves(moved []RolloutMove) {
	if len(moved) == 0 {
		return
	}
	e.subsMu.Lock()
	subs := slices.Clone(e.rolloutSubs)
	e.subsMu.Unlock()
	for _, m := range moved {
		for _, fn := range subs {
			fn(m)
		}
	}
}
