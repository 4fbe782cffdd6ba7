package revisions

import (
	"context"
	"fmt"
)

// Ownership is who configures a node, as the engine knows it.
type Ownership struct {
	// Owner is the source that owns the node now (NodeRecord.Owner); ""
	// when nobody does.
	Owner string
	// Last is the source the newest revision of the history came from,
	// even when the node was released since; "" for a node with no
	// history.
	Last string
}

// Ownership returns who configures node. A follower answers from what it
// mirrored of the store.
func (e *Engine) Ownership(node string) Ownership {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := e.nodes[node]
	if n == nil {
		return Ownership{}
	}
	o := Ownership{Owner: n.rec.Owner}
	if len(n.rec.History) > 0 {
		if r := n.revs[n.rec.History[0]]; r != nil {
			o.Last = r.Origin.Source
		}
	}
	return o
}

// Owners returns the owner of every owned node, by node ID.
func (e *Engine) Owners() map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]string, len(e.nodes))
	for id, n := range e.nodes {
		if n.rec.Owner != "" {
			out[id] = n.rec.Owner
		}
	}
	return out
}

// Release records that owner no longer configures node: the node keeps
// its history and what it serves, but belongs to nobody, so that another
// source may take it. Releasing a node another source owns, or nobody
// does, changes nothing.
func (e *Engine) Release(ctx context.Context, node, owner string) error {
	e.phase.RLock()
	defer e.phase.RUnlock()
	n, release := e.lockNode(ctx, node, false)
	defer release()
	if e.following {
		return ErrNotLeader
	}
	if n == nil || n.rec.Owner == "" || n.rec.Owner != owner {
		return nil
	}
	n.rec.Owner = ""
	if err := e.commit(ctx, n, nil); err != nil {
		return fmt.Errorf("release node %q: %w", node, err)
	}
	return nil
}
