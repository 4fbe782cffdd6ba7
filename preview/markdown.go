package preview

import (
	"fmt"
	"html"
	"strings"

	"github.com/legate-dev/legate/render"
)

// openLines is how many diff lines a report may hold in all for its node
// sections to be shown open; a longer one shows them folded.
const openLines = 60

// Markdown is the report as GitHub- and Gitea-flavoured markdown: a
// summary table, then one collapsible section per node with its resource
// lists and diffs. With limit > 0 the text is at most limit bytes: whole
// rows and sections are left out from the end and a note says how many.
func (r *Report) Markdown(limit int) string {
	head := r.markdownHead()
	var rows, sections []string
	if r.Invalid {
		for _, d := range r.Diagnostics {
			rows = append(rows, diagnosticItem(d))
		}
	} else if len(r.Nodes) > 0 {
		open := r.diffLines() <= openLines
		for _, n := range r.Nodes {
			rows = append(rows, tableRow(n))
			sections = append(sections, nodeSection(n, open))
		}
	}
	tableHead := ""
	if !r.Invalid && len(rows) > 0 {
		tableHead = "| node | change | proxies | resources |\n| --- | --- | --- | --- |\n"
	}
	return assemble(head, tableHead, rows, sections, limit)
}

func diagnosticItem(d render.Diagnostic) string {
	return "- " + code(d.Pos.String()) + ": " + escape(strings.TrimPrefix(d.String(), d.Pos.String()+": ")) + "\n"
}

func (r *Report) markdownHead() string {
	var b strings.Builder
	b.WriteString("### legate preview: " + escape(r.headline()) + "\n\n")
	if len(r.Warnings) > 0 {
		b.WriteString("Warnings (accepted, but likely not meant):\n\n")
		for _, d := range r.Warnings {
			b.WriteString(diagnosticItem(d))
		}
		b.WriteString("\n")
	}
	for _, n := range r.Notes {
		b.WriteString("> " + escape(n) + "\n\n")
	}
	for _, o := range r.omissions() {
		b.WriteString("> " + escape(o) + "\n\n")
	}
	return b.String()
}

func (r *Report) diffLines() int {
	n := 0
	for _, nc := range r.Nodes {
		for _, tc := range nc.Types {
			for _, d := range tc.Diffs {
				n += strings.Count(d.Diff, "\n")
			}
		}
	}
	return n
}

func tableRow(n NodeChange) string {
	proxies := "unknown"
	if n.Proxies != nil {
		proxies = fmt.Sprint(*n.Proxies)
	}
	var kinds []string
	for _, tc := range n.Types {
		kinds = append(kinds, escape(tc.Type)+" "+counts(tc))
	}
	return "| " + code(n.Node) + " | " + n.Change + " | " + proxies + " | " + strings.Join(kinds, ", ") + " |\n"
}

// counts is "(2 changed, 1 added)".
func counts(tc TypeChange) string {
	var parts []string
	if len(tc.Changed) > 0 {
		parts = append(parts, fmt.Sprintf("%d changed", len(tc.Changed)))
	}
	if len(tc.Added) > 0 {
		parts = append(parts, fmt.Sprintf("%d added", len(tc.Added)))
	}
	if len(tc.Removed) > 0 {
		parts = append(parts, fmt.Sprintf("%d removed", len(tc.Removed)))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func nodeSection(n NodeChange, open bool) string {
	var b strings.Builder
	attr := ""
	if open {
		attr = " open"
	}
	fmt.Fprintf(&b, "<details%s><summary>node %s: %s</summary>\n\n", attr, code(n.Node), html.EscapeString(nodeLine(n)))
	for _, tc := range n.Types {
		b.WriteString("- **" + escape(tc.Type) + "**: " + typeLine(tc, code) + "\n")
	}
	b.WriteString("\n")
	for _, tc := range n.Types {
		for _, d := range tc.Diffs {
			switch {
			case d.Diff != "":
				fence := fenceFor(d.Diff)
				b.WriteString(fence + "diff\n" + d.Diff + fence + "\n")
				if d.LinesOmitted > 0 {
					fmt.Fprintf(&b, "%d more line(s) of %s %s not shown\n", d.LinesOmitted, escape(tc.Type), code(d.Name))
				}
			case d.Note != "":
				b.WriteString(escape(tc.Type) + " " + code(d.Name) + " (" + d.Change + "): " + escape(d.Note) + "\n")
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("</details>\n\n")
	return b.String()
}

// assemble joins the report's parts within limit bytes, keeping whole
// rows and sections in order and saying what it left out.
func assemble(head, tableHead string, rows, sections []string, limit int) string {
	const noteRoom = 200
	var b strings.Builder
	b.WriteString(head)
	fits := func(s string) bool { return limit <= 0 || b.Len()+len(s)+noteRoom <= limit }
	keptRows := 0
	if len(rows) > 0 && fits(tableHead+rows[0]) {
		b.WriteString(tableHead)
		for _, row := range rows {
			if !fits(row) {
				break
			}
			b.WriteString(row)
			keptRows++
		}
		b.WriteString("\n")
	}
	keptSections := 0
	if keptRows == len(rows) {
		for _, s := range sections {
			if !fits(s) {
				break
			}
			b.WriteString(s)
			keptSections++
		}
	}
	if keptRows < len(rows) || keptSections < len(sections) {
		fmt.Fprintf(&b, "> cut to %d bytes: %d of %d row(s) and %d of %d section(s) not shown; `legate diff` prints the whole report\n",
			limit, len(rows)-keptRows, len(rows), len(sections)-keptSections, len(sections))
	}
	out := b.String()
	if limit > 0 && len(out) > limit {
		// Only a head longer than the limit gets here (many long notes).
		out = strings.ToValidUTF8(out[:limit], "")
	}
	return out
}

// code shows a name from the input as inline code. Names come from the
// repository under review: they are escaped so that none can close the
// element, inject HTML or a link, or break a table.
func code(s string) string {
	return "<code>" + escape(s) + "</code>"
}

// escape makes text from the input literal in markdown and HTML, on one
// line.
func escape(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c == '<':
			b.WriteString("&lt;")
		case c == '>':
			b.WriteString("&gt;")
		case c == '&':
			b.WriteString("&amp;")
		case c == '"':
			b.WriteString("&quot;")
		case c == '\n' || c == '\r':
			b.WriteByte(' ')
		case strings.ContainsRune("\\`*_[]|~", c):
			// Emphasis, code, links, table cells and strikethrough: the
			// rest of markdown's punctuation matters only at the start of
			// a line, where escaped text never stands.
			b.WriteByte('\\')
			b.WriteRune(c)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// fenceFor is a code fence longer than any run of backticks in s, so that
// no line of a diff can end the block early.
func fenceFor(s string) string {
	longest, run := 0, 0
	for i := range len(s) {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}
