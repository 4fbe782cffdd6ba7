package statuspage

import (
	"fmt"
	"strings"

	"github.com/legate-dev/legate/pipeline/nodestate"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/xds"
)

// NodeView is one entry of GET /api/v1/nodes: the engine's view of the node,
// the proxies connected for it, and what a person needs to read it: the
// state in plain words, the newest attempt to change it and its verdict,
// and whether any source still renders it.
type NodeView struct {
	revisions.NodeStatus
	// State is the node's state as every surface says it (nodestate.Of):
	// the engine's, or Rejected when the newest commit was refused before
	// it made a revision. It hides the engine's own in JSON on purpose, so
	// that the API says what the page and legate status say;
	// EngineState keeps the engine's.
	State       nodestate.State   `json:"state"`
	EngineState revisions.State   `json:"engineState,omitempty"`
	Proxies     []xds.ProxyStatus `json:"proxies"`
	// Closest are, for an Unconfigured node, the configured node IDs
	// nearest to its ID (edit distance): the one its proxies most likely
	// meant.
	Closest []string `json:"closest,omitempty"`
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
	// Source is the source it came from: what to do next differs for a
	// commit and for an EnvoyConfig object.
	Source string `json:"source,omitempty"`
	// Hash is the revision it made; empty when validation rejected it.
	Hash    string `json:"hash,omitempty"`
	Verdict string `json:"verdict"`
	// Error is the first error: a validation diagnostic or the proxies'
	// rejection.
	Error string `json:"error,omitempty"`
}

// Name says which change the attempt was, as people read it: "commit
// 1a2b3c4d5e6f", or, with no commit, "change default/edge@2" (an
// EnvoyConfig at generation 2) or "change latest@sha256:…" (an OCI
// artifact without a commit).
func (a Attempt) Name() string {
	switch {
	case a.Commit != "":
		return "commit " + revisions.Short(a.Commit)
	case a.Revision != "":
		return "change " + a.Revision
	}
	return "change"
}

// FromEnvoyConfig says that the attempt is an EnvoyConfig object's: it is
// fixed by applying the object again, not by a commit.
func (a Attempt) FromEnvoyConfig() bool {
	ref, ok := sources.ParseRef(a.Source)
	return ok && ref.Kind == sources.RefEnvoyConfig
}

// InCluster says that the attempt came from an EnvoyConfig or an
// EnvoySource: its revisions are objects of a cluster's API server.
func (a Attempt) InCluster() bool {
	_, ok := sources.ParseRef(a.Source)
	return ok
}

// StateMeanings defines every node state, problems first, as the docs,
// the status page and legate status say it.
var StateMeanings = nodestate.Meanings

// StateMeaning returns the definition of state.
func StateMeaning(state nodestate.State) string { return nodestate.MeaningOf(state) }

// NewNodeView completes the engine's status of a node for people: the
// proxies connected for it, the newest attempt to change it (from the
// sources' status) and a summary. orphaned says that no source renders it
// any more (a home's own judgement).
func NewNodeView(st revisions.NodeStatus, proxies []xds.ProxyStatus, srcs []Source, orphaned bool) NodeView {
	if proxies == nil {
		proxies = []xds.ProxyStatus{}
	}
	v := NodeView{NodeStatus: st, EngineState: st.State, Proxies: proxies, Orphaned: orphaned}
	v.Attempt = attempt(st, srcs, len(v.Proxies))
	v.State = nodestate.Of(nodestate.Input{Engine: st.State, NewestRejected: v.Attempt != nil && v.Attempt.Verdict == VerdictRejectedValidation})
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
		// A source whose newest content was refused (Invalid) and whose
		// newest fetch is not what made the top revision: the author's
		// last change never reached the engine. Comparing revisions, not
		// commits, covers EnvoyConfig objects too (no commit, a
		// generation).
		if src.Name != top.Source || !src.Invalid || (src.Revision != "" && src.Revision == top.Revision) {
			continue
		}
		a := &Attempt{Commit: src.Commit, Revision: src.Revision, Source: src.Name, Verdict: VerdictRejectedValidation, Error: src.LastError}
		if len(src.Diagnostics) > 0 {
			a.Error = src.Diagnostics[0]
		}
		return a
	}
	a := &Attempt{Commit: top.Commit, Revision: top.Revision, Source: top.Source, Hash: top.Hash}
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

// summary says in plain words where the node stands. It follows
// v.State, so that it never says "the newest revision" of a node whose
// newest commit never made one.
func summary(v NodeView) string {
	var parts []string
	// The engine's count stands in where the proxies themselves are not
	// listed (legate status reading a cluster).
	connected := max(len(v.Proxies), v.Answers.Connected)
	// Guests (proxies of namespaces the node is shared with) are left out
	// of the verdict while the owner's own proxies answer for it.
	judged := max(connected-v.Answers.GuestsAside, 0)
	served := "an older revision"
	if v.Published != nil && v.Published.Commit != "" {
		served = "the revision of commit " + revisions.Short(v.Published.Commit)
	} else if v.Published != nil && v.Published.Revision != "" {
		served = "the revision of " + v.Published.Revision
	}
	switch v.State {
	case nodestate.InSync:
		parts = append(parts, fmt.Sprintf("serving the newest revision; accepted by %s", plural(v.Answers.Accepted, "proxy", "proxies")))
	case nodestate.Pending:
		if connected == 0 {
			parts = append(parts, "serving the newest revision; no proxy of this node is connected now, so its verdict waits for one")
		} else {
			parts = append(parts, fmt.Sprintf("serving the newest revision; %d of %s answered", v.Answers.Accepted+v.Answers.Rejected, plural(judged, "proxy", "proxies")))
		}
	case nodestate.Degraded:
		parts = append(parts, fmt.Sprintf("serving the newest revision; rejected by %d of %s, below the taint threshold", v.Answers.Rejected, plural(judged, "proxy", "proxies")))
	case nodestate.Rejected:
		commit := "the newest commit"
		if v.Attempt != nil {
			commit = "the newest " + v.Attempt.Name()
		}
		parts = append(parts, commit+" was rejected by validation and reached no proxy; "+served+" is still served")
	case nodestate.Rollback:
		parts = append(parts, "rolled back: the proxies rejected newer revisions, so "+served+" is served")
	case nodestate.RollbackFailed:
		parts = append(parts, "every revision was rejected by the proxies; the newest stays served")
	case nodestate.Unconfigured:
		parts = append(parts, fmt.Sprintf("%s asks for this node ID and nothing configures it, so it gets no configuration", plural(connected, "proxy", "proxies")))
		if len(v.Closest) > 0 {
			parts = append(parts, "did you mean "+strings.Join(v.Closest, " or ")+"? (the node ID in the proxy's bootstrap)")
		}
		return strings.Join(parts, "; ")
	}
	if connected == 0 && v.State != nodestate.Pending {
		parts = append(parts, "no proxy connected")
	}
	if v.State == nodestate.Rollback && v.Attempt != nil && v.Attempt.Verdict == VerdictRejectedValidation {
		parts = append(parts, "and the newest "+v.Attempt.Name()+" was rejected by validation")
	}
	if g := v.Answers.GuestsAside; g > 0 {
		parts = append(parts, fmt.Sprintf("%s of the namespaces this node is shared with not counted: the owner's own proxies decide", plural(g, "proxy", "proxies")))
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

// UnconfiguredView is the entry of a node ID that connected proxies ask
// for and nothing configures, with the configured IDs closest to it.
func UnconfiguredView(id string, proxies []xds.ProxyStatus, configured []string) NodeView {
	v := NodeView{NodeStatus: revisions.NodeStatus{NodeID: id, History: []revisions.RevisionStatus{}}, State: nodestate.Unconfigured, Proxies: proxies}
	if v.Proxies == nil {
		v.Proxies = []xds.ProxyStatus{}
	}
	v.Answers.Connected = len(v.Proxies)
	v.Closest = nodestate.Closest(id, configured, 3)
	v.Summary = summary(v)
	return v
}
