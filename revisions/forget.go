package revisions

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// Forget stops serving node and deletes its history: its proxies receive
// every type it was served with no resources, and the node no longer
// appears in Nodes. It is for nodes no source renders any more (pruning);
// if a source renders the node again, it starts a new history. The node's
// generation is kept so versions are never reused.
func (e *Engine) Forget(ctx context.Context, node string) error {
	e.phase.RLock()
	defer e.phase.RUnlock()
	n, release := e.lockNode(ctx, node, false)
	defer release()
	if n == nil || len(n.rec.History) == 0 {
		return fmt.Errorf("node %q: %w", node, ErrNotFound)
	}
	n.rec.Generation++
	version := fmt.Sprintf("pruned-%d", n.rec.Generation)
	empty := Publication{Version: version, Types: make(map[string]PublishedType, len(n.rec.Types))}
	types := make(map[string]TypeVersion, len(n.rec.Types))
	for url := range n.rec.Types {
		empty.Types[url] = PublishedType{Version: version}
		types[url] = TypeVersion{Version: version}
	}
	if err := e.publish(node, empty); err != nil {
		return fmt.Errorf("stop serving node %q: %w", node, err)
	}
	drop := slices.Sorted(maps.Keys(n.revs))
	n.rec.Owner = ""
	n.rec.History, n.rec.Published, n.rec.Version, n.rec.Types = nil, "", version, types
	clear(n.revs)
	clear(n.changed)
	n.waiting = nil
	n.track.reset(version, e.clock.Now())
	return e.commit(ctx, n, drop)
}
