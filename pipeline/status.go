package pipeline

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/legate-dev/legate/render"
)

// MaxDiagnostics bounds the renderer messages a Status keeps; the count of
// all of them is kept beside.
const MaxDiagnostics = 20

// Status is where one source stands after its last pass through the
// pipeline. It holds no fetch state (the home keeps that: when it last
// fetched, whether the fetch failed).
type Status struct {
	Source string `json:"source"`
	// Revision and Commit are those of the last fetch handed to Sync, in
	// Flux's form ("main@sha1:<sha>") and as a full SHA.
	Revision string `json:"revision,omitempty"`
	Commit   string `json:"commit,omitempty"`
	// AppliedRevision is the last revision whose configuration was applied
	// (Flux's lastAppliedRevision); it trails Revision while the newest
	// commit is invalid. LastApplied is when.
	AppliedRevision string    `json:"appliedRevision,omitempty"`
	LastApplied     time.Time `json:"lastApplied,omitzero"`
	// Nodes are the node IDs the last good render gave this source and it
	// applied (a node another source owns is not among them).
	Nodes []string `json:"nodes,omitempty"`
	// Invalid: the last rendered content was rejected by validation;
	// Diagnostics holds its first errors and DiagnosticCount all of them.
	Invalid         bool                `json:"invalid,omitempty"`
	Diagnostics     []render.Diagnostic `json:"diagnostics,omitempty"`
	DiagnosticCount int                 `json:"diagnosticCount,omitempty"`
	// Warnings are the first warnings of the last accepted render.
	Warnings []render.Diagnostic `json:"warnings,omitempty"`
	// ApplyErrors are the nodes of the last pass the engine could not
	// store.
	ApplyErrors []NodeError `json:"applyErrors,omitempty"`
	// Tainted are the nodes of the last pass whose content the proxies
	// had rejected before: applied, yet not served.
	Tainted []string `json:"tainted,omitempty"`
	// Conflicts are the node IDs this source and another both render, as
	// they stand now (computed when the Status is read).
	Conflicts []Conflict `json:"conflicts,omitempty"`
}

// NodeError is one node whose apply failed.
type NodeError struct {
	Node  string `json:"node"`
	Error string `json:"error"`
}

// Conflict is one node ID rendered by two sources: Owner serves it,
// Contender's configuration of it is ignored until Owner stops rendering
// it.
type Conflict struct {
	Node string `json:"node"`
	// Owner is "" when Foreign.
	Owner     string `json:"owner,omitempty"`
	Contender string `json:"contender"`
	// Foreign: the node belongs to another tenant (Options.Tenant), whose
	// objects are not named.
	Foreign bool `json:"foreign,omitempty"`
}

// Message says what the conflict means to source, one of its two sides.
func (c Conflict) Message(source string) string {
	if c.Foreign {
		return fmt.Sprintf("node %q belongs to another namespace; a node ID is configured from one namespace only, so this configuration of it is ignored (use a node ID of your own)", c.Node)
	}
	if source == c.Owner {
		return fmt.Sprintf("node %q is also claimed by source %q; its configuration from there is ignored", c.Node, c.Contender)
	}
	return fmt.Sprintf("node %q is already rendered by source %q; a node ID may come from one source only", c.Node, c.Owner)
}

// Problems lists, one line each, what is wrong with the source as its
// status stands: a rejected render, nodes whose apply failed, conflicts.
// It is empty when nothing is.
func (s Status) Problems() []string {
	var out []string
	if s.Invalid && len(s.Diagnostics) > 0 {
		out = append(out, fmt.Sprintf("validation failed with %d error(s): %s", s.DiagnosticCount, s.Diagnostics[0]))
	}
	for _, e := range s.ApplyErrors {
		out = append(out, fmt.Sprintf("node %q: %s", e.Node, e.Error))
	}
	for _, c := range s.Conflicts {
		out = append(out, c.Message(s.Source))
	}
	return out
}

// Summary is Problems on one line, or "".
func (s Status) Summary() string { return strings.Join(s.Problems(), "; ") }

// clone copies the slices of s so that the copy can be handed out.
func (s Status) clone() Status {
	s.Nodes = slices.Clone(s.Nodes)
	s.Diagnostics = slices.Clone(s.Diagnostics)
	s.Warnings = slices.Clone(s.Warnings)
	s.ApplyErrors = slices.Clone(s.ApplyErrors)
	s.Tainted = slices.Clone(s.Tainted)
	s.Conflicts = slices.Clone(s.Conflicts)
	return s
}

// firstDiagnostics is at most MaxDiagnostics of ds.
func firstDiagnostics(ds []render.Diagnostic) []render.Diagnostic {
	return slices.Clone(ds[:min(len(ds), MaxDiagnostics)])
}
