package standalone

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/sources"
)

// A commit that changes nothing under a source's path is not rendered
// again, but it still moves the source: its content is re-applied under
// the new commit from the last render, so the revision records the newest
// commit that carries it and the commit gets its status like any other
// (success when the content is already accepted, the same failure when it
// was invalid or rejected).

// lastRender is a source's last render and the commit it was last applied
// or recorded for.
type lastRender struct {
	result *render.Result
	commit string
}

// remember records the render of a source's content at commit.
func (s *Server) remember(source, commit string, result *render.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastRenders[source] = &lastRender{result: result, commit: commit}
}

// recommit re-applies the last render of the loop's source under origin
// when origin is a commit the render was not applied for yet.
func (l *sourceLoop) recommit(ctx context.Context, origin sources.Origin, now time.Time) {
	l.s.mu.Lock()
	last := l.s.lastRenders[l.cfg.Name]
	if last == nil || origin.Commit == "" || origin.Commit == last.commit {
		l.s.mu.Unlock()
		return
	}
	last.commit = origin.Commit
	l.s.mu.Unlock()

	log := l.s.log.WithValues("source", l.cfg.Name, "revision", origin.Revision())
	if !last.result.OK() {
		l.s.engine.RecordValidationFailure(origin, last.result.Diagnostics)
		return
	}
	nodes := make([]string, 0, len(last.result.Nodes))
	for id := range last.result.Nodes {
		if owner, ok := l.s.claim(id, l.cfg.Name); ok && owner == l.cfg.Name {
			nodes = append(nodes, id)
		}
	}
	slices.Sort(nodes)
	var problems, rejected []string
	for _, node := range nodes {
		if l.s.taintedContent(node, last.result.Nodes[node].Hash) {
			rejected = append(rejected, node)
		}
		if err := l.s.engine.Apply(ctx, node, last.result.Nodes[node], origin); err != nil {
			log.Error(err, "apply failed", "node", node)
			problems = append(problems, fmt.Sprintf("node %q: %v", node, err))
		}
	}
	log.Info("commit changes nothing under the path; its content is recorded under it", "commit", origin.Commit)
	logApplied(log, origin.Commit, nodes, rejected)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.status.LastApplied = &now
	l.status.AppliedRevision = origin.Revision()
	if len(problems) > 0 {
		l.status.LastError = strings.Join(problems, "; ")
	}
}
