package revisions

import "context"

// lockNode takes the op lock of node id and then mu, and returns the node
// with both held and the function that lets both go. create makes a node
// not known yet; otherwise a node not known is nil, with mu held all the
// same. Waiting for op happens without mu, so reads go on meanwhile.
func (e *Engine) lockNode(ctx context.Context, id string, create bool) (*nodeState, func()) {
	for {
		e.mu.Lock()
		n := e.nodes[id]
		if n == nil {
			if !create {
				return nil, e.unlock
			}
			n = e.nodeFor(id)
		}
		e.mu.Unlock()
		n.op.Lock()
		e.mu.Lock()
		if e.nodes[id] == n {
			return n, func() { e.releaseNode(ctx, n) }
		}
		// drain dropped the node while we waited: take the new one.
		n.op.Unlock()
		e.mu.Unlock()
	}
}

// tryLockNode takes n's op lock if nobody holds it. Called with mu held;
// it does not wait, so it cannot invert the lock order.
func (e *Engine) tryLockNode(n *nodeState) bool {
	return e.nodes[n.rec.Node] == n && n.op.TryLock()
}

// releaseNode applies the proxy events that arrived for n while its op
// lock was held, then lets op and mu go. Called with both held. op is
// released before mu so that drain, which looks under mu, either sees the
// node busy and leaves its events here, or free and applies them itself.
func (e *Engine) releaseNode(ctx context.Context, n *nodeState) {
	for len(n.deferred) > 0 {
		evs := n.deferred
		n.deferred = nil
		e.observe(ctx, n, evs)
	}
	n.op.Unlock()
	e.unlock()
}
