// Package nodestate is the one state model of a node that every surface
// shows: the status page, legate status, the read API's JSON and the
// EnvoyConfig's status that kubectl get prints. The engine knows what it
// serves (revisions.State); this package adds what the engine never sees,
// a newest commit that validation refused before it made a revision, so
// that no surface shows a node as InSync or Pending while its author's last
// change was rejected. It is pure and imports only revisions, so that every
// home and the CLI can link it.
package nodestate

import (
	"fmt"
	"strings"

	"github.com/legate-dev/legate/revisions"
)

// State is where a node stands, as every surface says it. It is the
// engine's type, so that code comparing a node's state with the engine's
// constants reads the same whichever it holds; this package adds two
// values the engine never takes.
type State = revisions.State

// The states: the engine's six, Rejected and Unconfigured.
const (
	InSync         = revisions.StateInSync
	Pending        = revisions.StatePending
	Degraded       = revisions.StateDegraded
	Rollback       = revisions.StateRollback
	RollbackFailed = revisions.StateRollbackFailed
	Progressing    = revisions.StateProgressing
	// Rejected: the newest commit was refused before it reached a proxy
	// (validation, a render error, a YAML tab), so the node still serves
	// what an older commit made. The engine cannot see it: nothing new
	// reached it.
	Rejected State = "Rejected"
	// Unconfigured is a node ID that proxies ask for and nothing
	// configures (most often a typo in a proxy's bootstrap).
	Unconfigured State = "Unconfigured"
)

// Input is what the state of a node is decided from.
type Input struct {
	// Engine is the engine's state of the node; "" when the engine holds
	// nothing for it.
	Engine revisions.State
	// NewestRejected: the newest commit of the node's source was refused
	// by validation and made no revision.
	NewestRejected bool
}

// Of decides the state of a node. A rollback outranks a rejected newest
// commit: the node then serves an older revision than its author thinks,
// which is the more urgent fact, and the rejected commit is still shown
// as the newest attempt. Otherwise a rejected newest commit outranks what
// is served, however healthy, because the author's change is not there.
func Of(in Input) State {
	switch {
	case in.Engine == revisions.StateRollback || in.Engine == revisions.StateRollbackFailed:
		return in.Engine
	case in.NewestRejected:
		return Rejected
	case in.Engine == "":
		return Pending
	default:
		return in.Engine
	}
}

// Meaning is one state and its definition.
type Meaning struct {
	State State
	// Label is how a count of nodes in the state reads ("2 in sync").
	Label   string
	Meaning string
}

// Meanings defines every state, problems first, as the docs, the status
// page and legate status say it.
var Meanings = []Meaning{
	{RollbackFailed, "rollback failed", "every revision in the history is tainted; the newest stays served"},
	{Rollback, "rolled back", "the newest revisions were rejected by the proxies (tainted), so an older untainted revision is served"},
	{Rejected, "newest commit rejected", "the newest commit (of an EnvoyConfig: its newest generation) was rejected by validation before any proxy saw it; the revision of an older one is still served"},
	{Degraded, "degraded", "the newest revision is served; some proxies rejected it, fewer than the taint threshold"},
	{Unconfigured, "unconfigured", "proxies connect with this node ID and nothing configures it (a typo in their bootstrap?); they get no configuration"},
	{Progressing, "rolling out", "a progressive rollout of the newest revision is under way: the proxies of its current step are served it, the others the last good revision"},
	{Pending, "pending", "the newest revision is served and not every proxy has answered yet; with no proxy connected it stays Pending until one connects"},
	{InSync, "in sync", "the newest revision is served and every connected proxy accepted it"},
}

// MeaningOf returns the definition of s, "" for an unknown state.
func MeaningOf(s State) string {
	for _, m := range Meanings {
		if m.State == s {
			return m.Meaning
		}
	}
	return ""
}

// Problem says that s needs a person: everything but InSync, Pending and
// Progressing (a rollout that needs a person fails or pauses, which its
// own status says).
func Problem(s State) bool { return s != InSync && s != Pending && s != Progressing }

// Rank orders states problems first (0 is the most urgent); unknown
// states come last.
func Rank(s State) int {
	for i, m := range Meanings {
		if m.State == s {
			return i
		}
	}
	return len(Meanings)
}

// Counts says how many nodes stand in each state, problems first:
// "1 rolled back · 1 newest commit rejected · 2 in sync"; "" for none.
func Counts(states []State) string {
	n := map[State]int{}
	for _, s := range states {
		n[s]++
	}
	var parts []string
	for _, m := range Meanings {
		if c := n[m.State]; c > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c, m.Label))
		}
	}
	return strings.Join(parts, " · ")
}
