package statuspage

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/legate-dev/legate/pipeline"
)

// Source is what the status API and page show of one source.
type Source struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	URL  string `json:"url"`
	// Revision is the last fetched revision in Flux's form
	// ("main@sha1:<sha>").
	Revision string `json:"revision,omitempty"`
	Commit   string `json:"commit,omitempty"`
	// AppliedRevision is the last revision whose configuration was applied
	// (Flux's lastAppliedRevision); it trails Revision while the newest
	// commit is invalid.
	AppliedRevision string `json:"appliedRevision,omitempty"`
	// Nodes are the node IDs the source's last good render produced.
	Nodes       []string   `json:"nodes,omitempty"`
	LastFetch   *time.Time `json:"lastFetch,omitempty"`
	LastApplied *time.Time `json:"lastApplied,omitempty"`
	// LastError is the last fetch, render or apply failure; empty when the
	// last attempt succeeded.
	LastError string `json:"lastError,omitempty"`
	// Diagnostics are the renderer's errors of the last rejected render,
	// or the warnings of the last accepted one.
	Diagnostics []string `json:"diagnostics,omitempty"`
	// Rejection says when the proxies rejected (tainted) the revision the
	// newest commit made, on which nodes and why: Revision is then
	// applied, yet not served.
	Rejection string `json:"rejection,omitempty"`
	// LastAttempt is when the last finished fetch → render → apply pass
	// started: a fetch requested at T is done once LastAttempt is after T.
	LastAttempt *time.Time `json:"lastAttempt,omitempty"`
	// Invalid: the newest content fetched was rejected by validation
	// (Diagnostics are its errors): what is served comes from an older
	// commit.
	Invalid bool `json:"invalid,omitempty"`
	// Suspended sources are not fetched until resumed (legate suspend).
	Suspended bool `json:"suspended,omitempty"`
}

// SourceOf is the part of a Source the pipeline knows: what was fetched
// and applied, the nodes, the last failure and the diagnostics shown
// (the errors of a rejected render, else the warnings of the accepted
// one). The home adds its own part (kind, URL, fetch times).
func SourceOf(ps pipeline.Status) Source {
	st := Source{Name: ps.Source, Revision: ps.Revision, Commit: ps.Commit, AppliedRevision: ps.AppliedRevision, Nodes: ps.Nodes, LastError: ps.Summary(), Invalid: ps.Invalid}
	if !ps.LastApplied.IsZero() {
		st.LastApplied = &ps.LastApplied
	}
	shown := ps.Warnings // an accepted commit shows only its warnings
	if ps.Invalid {
		shown = ps.Diagnostics
	}
	for _, d := range shown {
		st.Diagnostics = append(st.Diagnostics, d.String())
	}
	return st
}

// WriteJSON writes v as the indented JSON body of a response with code,
// never cached: what both homes' APIs answer.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	WriteJSONIndented(w, code, v, true)
}

// WriteJSONIndented is WriteJSON, indented or compact: indenting re-reads
// the whole encoding, which is most of the cost of a large answer.
func WriteJSONIndented(w http.ResponseWriter, code int, v any, indent bool) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	if indent {
		enc.SetIndent("", "  ")
	}
	_ = enc.Encode(v)
}
