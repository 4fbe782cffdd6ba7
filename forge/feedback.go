package forge

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"sync"

	"github.com/go-logr/logr"

	"github.com/legate-dev/legate/revisions"
)

// ValidationContext is the commit status context of a validation failure
// of a source that has not rendered any node yet.
const ValidationContext = "legate"

// Feedback turns the engine's outcomes into commit statuses and queues them
// on a Dispatcher. Its state is what the statuses need beyond one
// outcome: which nodes each source rendered last (a validation failure is
// reported on each of them) and which commit of each node still waits for
// its final status (to close it when a newer commit supersedes it).
type Feedback struct {
	dispatcher *Dispatcher
	targets    map[string]bool // sources whose statuses are posted
	publicURL  string
	log        logr.Logger

	mu         sync.Mutex
	nodeSource map[string]string   // node -> source of its latest outcome
	inflight   map[string]inflight // node -> commit with only a pending status
}

type inflight struct {
	source, commit string
	// rollout: the commit's revision is a rollout's candidate, served to
	// some proxies only.
	rollout bool
}

// queued is one status for one target (a source name).
type queued struct {
	target string
	status Status
}

func NewFeedback(d *Dispatcher, targets map[string]bool, publicURL string, log logr.Logger) *Feedback {
	if targets == nil {
		targets = map[string]bool{}
	}
	return &Feedback{
		dispatcher: d, targets: targets, publicURL: publicURL, log: log,
		nodeSource: map[string]string{}, inflight: map[string]inflight{},
	}
}

// SetTarget says whether the statuses of source's commits are posted (a
// home whose sources come and go calls it as they do).
func (f *Feedback) SetTarget(source string, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if on {
		f.targets[source] = true
	} else {
		delete(f.targets, source)
	}
}

// Seed records which source rendered each restored node, so that a
// validation failure right after a restart is still reported per node.
func (f *Feedback) Seed(nodes []revisions.NodeStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range nodes {
		if len(n.History) > 0 && n.History[0].Source != "" {
			f.nodeSource[n.NodeID] = n.History[0].Source
		}
	}
}

// Observe is the engine subscriber: it queues the statuses of o in the
// persisted outbox (a quick local write) and returns.
func (f *Feedback) Observe(o revisions.Outcome) {
	for _, q := range f.statuses(o) {
		if err := f.dispatcher.Enqueue(context.Background(), q.target, q.status); err != nil {
			f.log.Error(err, "could not queue a commit status", "source", q.target, "commit", q.status.Commit, "context", q.status.Context)
		}
	}
}

// statuses decides the commit statuses of one outcome and updates the
// feedback state. It does no I/O.
func (f *Feedback) statuses(o revisions.Outcome) []queued {
	f.mu.Lock()
	defer f.mu.Unlock()
	src, commit := o.Origin.Source, o.Origin.Commit
	var out []queued

	if o.Node == "" { // a validation failure: nothing was published
		if !f.targets[src] || commit == "" {
			return nil
		}
		desc := o.Description
		var nodes []string
		for n, s := range f.nodeSource {
			if s == src {
				nodes = append(nodes, n)
			}
		}
		slices.Sort(nodes)
		if len(nodes) == 0 {
			return []queued{{src, Status{Commit: commit, State: StateFailure, Context: ValidationContext, Description: desc}}}
		}
		for _, n := range nodes {
			out = append(out, queued{src, Status{
				Commit: commit, State: StateFailure, Context: ContextFor(n),
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
			st := Status{
				Commit: prev.commit, State: StateSuccess, Context: ContextFor(o.Node),
				Description: fmt.Sprintf("superseded by %s before every proxy answered; not rejected", revisions.Short(cmp.Or(commit, o.Hash))),
				TargetURL:   f.targetURL(o.Node),
			}
			if prev.rollout {
				// A rollout's candidate that a newer commit replaced never
				// reached every proxy: it did not succeed (Argo Rollouts
				// says the same of a replaced ReplicaSet).
				st.State = StateFailure
				st.Description = fmt.Sprintf("superseded by %s during its rollout; never promoted", revisions.Short(cmp.Or(commit, o.Hash)))
			}
			out = append(out, queued{prev.source, st})
		}
	}
	if !f.targets[src] || commit == "" {
		return out
	}
	st := Status{Commit: commit, Context: ContextFor(o.Node), TargetURL: f.targetURL(o.Node)}
	switch o.Status {
	case revisions.OutcomePending:
		st.State = StatePending
		st.Description = fmt.Sprintf("revision %s %s", revisions.Short(o.Hash), o.Description)
		if o.Rollout {
			st.Description = o.Description
		}
		if !o.Waiting {
			f.inflight[o.Node] = inflight{source: src, commit: commit, rollout: o.Rollout}
		}
	case revisions.OutcomeSuccess:
		st.State = StateSuccess
		st.Description = o.Description
		if prev, ok := f.inflight[o.Node]; ok && prev.commit == commit {
			delete(f.inflight, o.Node)
		}
	case revisions.OutcomeFailure:
		st.State = StateFailure
		switch {
		case o.Rollout:
			// "rollout failed at step 1/5 (10% of proxies): proxy … rejected
			// the candidate: <its text>": the step, the proxy and its
			// text first, so that a forge's limit cuts the end.
			st.Description = o.Description
		case o.State == revisions.StateRollback:
			st.Description = "rolled back: " + o.Description
		case o.State == revisions.StateRollbackFailed:
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

// targetURL is legate's status of the node, when a public URL is set.
func (f *Feedback) targetURL(node string) string {
	if f.publicURL == "" {
		return ""
	}
	return f.publicURL + "/api/v1/nodes/" + url.PathEscape(node)
}
