package revisions

import (
	"context"
	"time"

	"github.com/legate-dev/legate/logging"
)

// wait records that rev could not be served yet. A new wait, or a new
// reason, is logged and reported as pending; the same wait again is not.
// Called with mu held.
func (e *Engine) wait(n *nodeState, prev *waiting, rev *Revision, msg string, now time.Time, announce bool) {
	w := &waiting{hash: rev.Hash, message: msg, since: now, announce: announce}
	if prev != nil && prev.hash == rev.Hash {
		w.since, w.announce = prev.since, prev.announce || announce
	}
	n.waiting = w
	e.settle(n)
	if prev != nil && prev.hash == w.hash && prev.message == w.message {
		return
	}
	logging.Warn(e.log, "revision waits for what the home cannot serve yet; the proxies keep the current one",
		"node", rev.Node, "revision", rev.Hash, "reason", msg)
	if w.announce {
		o := e.outcome(n, rev, OutcomePending, "waiting to be served: "+msg, now)
		o.Waiting = true
		e.emit(o)
	}
}

// retryWaiting tries again to publish the revisions that were not ready.
// Called with n.op and mu held.
func (e *Engine) retryWaiting(ctx context.Context, n *nodeState, now time.Time) {
	if n.waiting == nil {
		return
	}
	gen := n.rec.Generation
	e.reconcile(n, now, false, n.waiting.announce)
	if n.rec.Generation == gen {
		return
	}
	if err := e.commit(ctx, n, nil); err != nil {
		e.log.Error(err, "could not store a publication; will retry with the next write", "node", n.rec.Node)
	}
}
