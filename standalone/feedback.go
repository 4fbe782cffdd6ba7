package standalone

import (
	"context"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/go-logr/logr"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/sources/git/forge"
)

// ValidationContext is the commit status context of a validation failure
// of a source that has not rendered any node yet.
const ValidationContext = "legate"

// feedback turns the engine's outcomes into commit statuses and queues them
// on a forge.Dispatcher. Its state is what the statuses need beyond one
// outcome: which nodes each source rendered last (a validation failure is
// reported on each of them) and which commit of each node still waits for
// its final status (to close it when a newer commit supersedes it).
type feedback struct {
	dispatcher *forge.Dispatcher
	targets    map[string]bool // sources whose statuses are posted
	publicURL  string
	log        logr.Logger

	mu         sync.Mutex
	nodeSource map[string]string   // node -> source of its latest outcome
	inflight   map[string]inflight // node -> commit with only a pending status
}

type inflight struct{ source, commit string }

// queued is one status for one target (a source name).
type queued struct {
	target string
	status forge.Status
}

func newFeedback(d *forge.Dispatcher, targets map[string]bool, publicURL string, log logr.Logger) *feedback {
	return &feedback{
		dispatcher: d, targets: targets, publicURL: publicURL, log: log,
		nodeSource: map[string]string{}, inflight: map[string]inflight{},
	}
}

// seed records which source rendered each restored node, so that a
// validation failure right after a restart is still reported per node.
func (f *feedback) seed(nodes []revisions.NodeStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range nodes {
		if len(n.History) > 0 && n.History[0].Source != "" {
			f.nodeSource[n.NodeID] = n.History[0].Source
		}
	}
}

// observe is the engine subscriber: it queues the statuses of o in the
// persisted outbox (a quick local write) and returns.
func (f *feedback) observe(o revisions.Outcome) {
	for _, q := range f.statuses(o) {
		if err := f.dispatcher.Enqueue(context.Background(), q.target, q.status); err != nil {
			f.log.Error(err, "could not queue a commit status", "source", q.target, "commit", q.status.Commit, "context", q.status.Context)
		}
	}
}

// statuses decides the commit statuses of one outcome and updates the
// feedback state. It does no I/O.
func (f *feedback) statuses(o revisions.Outcome) []queued {
	f.mu.Lock()
	defer f.mu.Unlock()
	src, commit := o.Origin.Source, o.Origin.Commit
	var out []queued

	if o.Node == "" { // a validation failure: nothing was published
		if !f.targets[src] || commit == "" {
			return nil
		}
		desc := validationText(o)
		var nodes []string
		for n, s := range f.nodeSource {
			if s == src {
				nodes = append(nodes, n)
			}
		}
		slices.Sort(nodes)
		if len(nodes) == 0 {
			return []queued{{src, forge.Status{Commit: commit, State: forge.StateFailure, Context: ValidationContext, Description: desc}}}
		}
		for _, n := range nodes {
			out = append(out, queued{src, forge.Status{
				Commit: commit, State: forge.StateFailure, Context: forge.ContextFor(n),
				Description: desc, TargetURL: f.targetURL(n),
			}})
		}
		return out
	}

	f.nodeSource[o.Node] = src
	prev, waiting := f.inflight[o.Node]
	published := (o.Status == revisions.OutcomePending && !o.Waiting) || o.Status == revisions.OutcomeSuccess
	if waiting && published && (prev.commit != commit || prev.source != src) {
		// A newer commit is served before every proxy answered the older
		// one, whose check would otherwise stay pending for ever.
		delete(f.inflight, o.Node)
		if f.targets[prev.source] {
			out = append(out, queued{prev.source, forge.Status{
				Commit: prev.commit, State: forge.StateSuccess, Context: forge.ContextFor(o.Node),
				Description: fmt.Sprintf("superseded by %s before every proxy answered; not rejected", short(commit, o.Hash)),
				TargetURL:   f.targetURL(o.Node),
			}})
		}
	}
	if !f.targets[src] || commit == "" {
		return out
	}
	st := forge.Status{Commit: commit, Context: forge.ContextFor(o.Node), TargetURL: f.targetURL(o.Node)}
	switch o.Status {
	case revisions.OutcomePending:
		st.State = forge.StatePending
		st.Description = fmt.Sprintf("revision %s %s", short(o.Hash, ""), o.Description)
		if !o.Waiting {
			f.inflight[o.Node] = inflight{source: src, commit: commit}
		}
	case revisions.OutcomeSuccess:
		st.State = forge.StateSuccess
		st.Description = o.Description
		if prev, ok := f.inflight[o.Node]; ok && prev.commit == commit {
			delete(f.inflight, o.Node)
		}
	case revisions.OutcomeFailure:
		st.State = forge.StateFailure
		switch o.State {
		case revisions.StateRollback:
			st.Description = "rolled back: " + o.Description
		case revisions.StateRollbackFailed:
			st.Description = "rejected, no earlier revision to roll back to: " + o.Description
		default:
			st.Description = o.Description
		}
		if prev, ok := f.inflight[o.Node]; ok && prev.commit == commit {
			delete(f.inflight, o.Node)
		}
	default:
		return out
	}
	return append(out, queued{src, st})
}

// validationText is the description of a validation failure: the first
// diagnostics, compiler-style, with file names relative to the repository
// root (the renderer sees the tree under the source's path), so the author
// can open the file named.
func validationText(o revisions.Outcome) string {
	const shown = 3
	if len(o.Diagnostics) == 0 {
		return o.Description
	}
	var b strings.Builder
	fmt.Fprintf(&b, "validation failed with %d problem", len(o.Diagnostics))
	if len(o.Diagnostics) > 1 {
		b.WriteString("s")
	}
	for i, d := range o.Diagnostics {
		if i == shown {
			fmt.Fprintf(&b, "; and %d more", len(o.Diagnostics)-shown)
			break
		}
		pos := d.Pos
		if p := strings.Trim(o.Origin.Path, "/"); p != "" && p != "." && pos.File != "" {
			pos.File = path.Join(p, pos.File)
		}
		fmt.Fprintf(&b, "; %s: %s", pos, d.Message)
		if d.Rule != "" {
			fmt.Fprintf(&b, " [%s]", d.Rule)
		}
	}
	return b.String()
}

// targetURL is legate's status of the node, when a public URL is set.
func (f *feedback) targetURL(node string) string {
	if f.publicURL == "" {
		return ""
	}
	return f.publicURL + "/api/v1/nodes/" + url.PathEscape(node)
}

// short abbreviates a commit SHA or hash to 12 characters (or returns
// fallback when s is empty).
func short(s, fallback string) string {
	if s == "" {
		s = fallback
	}
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
