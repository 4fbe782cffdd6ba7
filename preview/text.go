package preview

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/legate-dev/legate/render"
)

// headline is the report's first line, without a prefix.
func (r *Report) headline() string {
	if r.Invalid {
		return fmt.Sprintf("%s is invalid: %d problem(s), nothing compared", r.Head, len(r.Diagnostics)+r.DiagnosticsOmitted)
	}
	s := r.Summary
	if !r.Changed() {
		return fmt.Sprintf("%s changes no node (%d unchanged)", r.Head, s.Unchanged)
	}
	return fmt.Sprintf("%s against %s: %d node(s) changed, %d added, %d removed, %d unchanged",
		r.Head, r.Base, s.Changed, s.Added, s.Removed, s.Unchanged)
}

// omissions are the sentences saying what the report's bounds left out.
func (r *Report) omissions() []string {
	var out []string
	if r.BaseInvalid {
		out = append(out, r.Base+" did not render: every node of "+r.Head+" is shown as added")
	}
	if r.DiagnosticsOmitted > 0 {
		out = append(out, fmt.Sprintf("%d more problem(s) not listed", r.DiagnosticsOmitted))
	}
	if r.WarningsOmitted > 0 {
		out = append(out, fmt.Sprintf("%d more warning(s) not listed", r.WarningsOmitted))
	}
	if r.NodesOmitted > 0 {
		out = append(out, fmt.Sprintf("%d more node(s) differ but are not listed", r.NodesOmitted))
	}
	if r.DiffsOmitted > 0 {
		out = append(out, fmt.Sprintf("%d resource diff(s) left out: the report reached its size bound", r.DiffsOmitted))
	}
	return out
}

// nodeLine describes a node's change and its blast radius.
func nodeLine(n NodeChange) string {
	s := n.Change
	if n.Proxies != nil {
		s += fmt.Sprintf(", %d proxies connected", *n.Proxies)
	}
	return s
}

// typeLine lists a type's names by change: "changed a, b; added c".
func typeLine(tc TypeChange, name func(string) string) string {
	var parts []string
	for _, g := range []struct {
		what  string
		names []string
	}{{Changed, tc.Changed}, {Added, tc.Added}, {Removed, tc.Removed}} {
		if len(g.names) == 0 {
			continue
		}
		ns := make([]string, len(g.names))
		for i, n := range g.names {
			ns[i] = name(n)
		}
		parts = append(parts, g.what+" "+strings.Join(ns, ", "))
	}
	return strings.Join(parts, "; ")
}

// Text writes the report for a terminal: a summary line, the nodes with
// their changed resources, then each resource's diff.
func (r *Report) Text(w io.Writer) error {
	var b strings.Builder
	b.WriteString(r.headline() + "\n")
	for _, n := range r.Notes {
		b.WriteString("note: " + n + "\n")
	}
	for _, d := range append(slices.Clone(r.Diagnostics), r.Warnings...) {
		b.WriteString(d.String() + "\n")
	}
	for _, o := range r.omissions() {
		b.WriteString("note: " + o + "\n")
	}
	for _, n := range r.Nodes {
		fmt.Fprintf(&b, "\nnode %s: %s\n", n.Node, nodeLine(n))
		for _, tc := range n.Types {
			fmt.Fprintf(&b, "  %s: %s\n", tc.Type, typeLine(tc, func(s string) string { return s }))
		}
		for _, tc := range n.Types {
			for _, d := range tc.Diffs {
				writeTextDiff(&b, tc.Type, d)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeTextDiff(b *strings.Builder, typ string, d ResourceDiff) {
	if d.Diff == "" {
		if d.Note != "" {
			fmt.Fprintf(b, "%s %s (%s): %s\n", typ, d.Name, d.Change, d.Note)
		}
		return
	}
	b.WriteString(d.Diff)
	if d.LinesOmitted > 0 {
		fmt.Fprintf(b, "... %d more line(s)\n", d.LinesOmitted)
	}
}

// JSON writes the report as one indented JSON object (the Report type's
// fields), for programs.
func (r *Report) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	out := *r
	if out.Diagnostics == nil && out.Invalid {
		out.Diagnostics = []render.Diagnostic{}
	}
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write the report as JSON: %w", err)
	}
	return nil
}
