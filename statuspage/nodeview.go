package statuspage

import (
	"fmt"
	"strings"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/xds"
)

// NodeView is one entry of GET /api/v1/nodes: the engine's view of the node,
// the proxies connected for it, and what a person needs to read it: the
// state in plain words, the newest attempt to change it and its verdict,
// and whether any source still renders it.
type NodeView struct {
	revisions.NodeStatus
	Proxies []xds.ProxyStatus `json:"proxies"`
	// Summary says in plain words what the node serves and why.
	Summary string `json:"summary"`
	// Orphaned is set when no configured source renders the node any more:
	// it keeps serving its last revision until pruned.
	Orphaned bool `json:"orphaned,omitempty"`
	// Attempt is the newest commit that tried to change the node and its
	// verdict.
	Attempt *Attempt `json:"attempt,omitempty"`
}

// Verdicts of an Attempt.
const (
	VerdictServed             = "served"
	VerdictWaitingForProxies  = "waiting for proxies"
	VerdictRejectedValidation = "rejected by validation"
	VerdictRejectedByProxies  = "rejected by proxies"
	VerdictWaitingToServe     = "waiting to be served"
	VerdictPartlyRejected     = "rejected by some proxies"
	VerdictNoProxy            = "served, no proxy connected"
)

// Attempt is the newest commit that tried to change a node.
type Attempt struct {
	Commit   string `json:"commit,omitempty"`
	Revision string `json:"revision,omitempty"`
	// Hash is the revision it made; empty when validation rejected it.
	Hash    string `json:"hash,omitempty"`
	Verdict string `json:"verdict"`
	// Error is the first error: a validation diagnostic or the proxies'
	// rejection.
	Error string `json:"error,omitempty"`
}

// StateMeanings defines every node state, as the docs, the status page and
// legate status say it.
var StateMeanings = []struct {
	State   revisions.State
	Meaning string
}{
	{revisions.StateInSync, "the newest revision is served and every connected proxy accepted it"},
	{revisions.StatePending, "the newest revision is served and not every proxy has answered yet; with no proxy connected it stays Pending until one connects"},
	{revisions.StateDegraded, "the newest revision is served; some proxies rejected it, fewer than the taint threshold"},
	{revisions.StateRollback, "the newest revisions were rejected by the proxies (tainted), so an older untainted revision is served"},
	{revisions.StateRollbackFailed, "every revision in the history is tainted; the newest stays served"},
}

// StateMeaning returns the definition of state.
func StateMeaning(state revisions.State) string {
	for _, m := range StateMeanings {
		if m.State == state {
			return m.Meaning
		}
	}
	return ""
}

// NewNodeView completes the engine's status of a node for people: the
// proxies connected for it, the newest attempt to change it (from the
// sources' status) and a summary. orphaned says that no source renders it
// any more (a home's own judgement).
func NewNodeView(st revisions.NodeStatus, proxies []xds.ProxyStatus, srcs []Source, orphaned bool) NodeView {
	if proxies == nil {
		proxies = []xds.ProxyStatus{}
	}
	v := NodeView{NodeStatus: st, Proxies: proxies, Orphaned: orphaned}
	v.Attempt = attempt(st, srcs, len(v.Proxies))
	v.Summary = summary(v)
	return v
}

// attempt finds the newest commit that tried to change the node: a
// validation failure of its source newer than its history, or its newest
// revision.
func attempt(st revisions.NodeStatus, srcs []Source, proxies int) *Attempt {
	if len(st.History) == 0 {
		return nil
	}
	top := st.History[0]
	for _, src := range srcs {
		if src.Name != top.Source || len(src.Diagnostics) == 0 || src.Commit == "" || src.Commit == top.Commit {
			continue
		}
		return &Attempt{Commit: src.Commit, Revision: src.Revision, Verdict: VerdictRejectedValidation, Error: src.Diagnostics[0]}
	}
	a := &Attempt{Commit: top.Commit, Revision: top.Revision, Hash: top.Hash}
	served := st.Published != nil && st.Published.Hash == top.Hash
	switch {
	case top.Tainted:
		a.Verdict = VerdictRejectedByProxies
		if top.Taint != nil {
			a.Error = top.Taint.Message
		}
	case st.Waiting != nil && st.Waiting.Hash == top.Hash:
		a.Verdict, a.Error = VerdictWaitingToServe, st.Waiting.Message
	case served && st.State == revisions.StateDegraded:
		a.Verdict = VerdictPartlyRejected
	case served && st.State == revisions.StateInSync:
		a.Verdict = VerdictServed
	case served && proxies == 0:
		a.Verdict = VerdictNoProxy
	default:
		a.Verdict = VerdictWaitingForProxies
	}
	return a
}

// summary says in plain words where the node stands.
func summary(v NodeView) string {
	var parts []string
	connected := len(v.Proxies)
	switch v.State {
	case revisions.StateInSync:
		parts = append(parts, fmt.Sprintf("serving the newest revision; accepted by %s", plural(v.Answers.Accepted, "proxy", "proxies")))
	case revisions.StatePending:
		if connected == 0 {
			parts = append(parts, "serving the newest revision; no proxy of this node is connected now, so its verdict waits for one")
		} else {
			parts = append(parts, fmt.Sprintf("serving the newest revision; %d of %s answered", v.Answers.Accepted+v.Answers.Rejected, plural(connected, "proxy", "proxies")))
		}
	case revisions.StateDegraded:
		parts = append(parts, fmt.Sprintf("serving the newest revision; rejected by %d of %s, below the taint threshold", v.Answers.Rejected, plural(connected, "proxy", "proxies")))
	case revisions.StateRollback:
		commit := "an older revision"
		if v.Published != nil && v.Published.Commit != "" {
			commit = "the revision of commit " + revisions.Short(v.Published.Commit)
		}
		parts = append(parts, "rolled back: the proxies rejected newer revisions, so "+commit+" is served")
	case revisions.StateRollbackFailed:
		parts = append(parts, "every revision was rejected by the proxies; the newest stays served")
	}
	if connected == 0 && v.State != revisions.StatePending {
		parts = append(parts, "no proxy connected")
	}
	if v.Attempt != nil && v.Attempt.Verdict == VerdictRejectedValidation {
		parts = append(parts, "newest commit "+revisions.Short(v.Attempt.Commit)+" rejected by validation")
	}
	if v.Waiting != nil {
		parts = append(parts, "revision "+revisions.Short(v.Waiting.Hash)+" waits to be served")
	}
	if v.Orphaned {
		parts = append(parts, "orphaned: no source renders this node any more (legate prune stops serving it)")
	}
	return strings.Join(parts, "; ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
