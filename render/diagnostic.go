package render

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Rules name the check behind a diagnostic.
const (
	RuleLimit     = "limit"     // file size, total size, file count, symlinks, a render's budget and deadline
	RuleInternal  = "internal"  // a renderer bug met while rendering the file
	RuleSyntax    = "syntax"    // YAML or JSON that does not parse
	RuleDocument  = "document"  // a document of no accepted shape
	RuleNode      = "node"      // no node ID for a resource
	RuleDecode    = "decode"    // strict protobuf decoding
	RulePGV       = "pgv"       // Envoy's protoc-gen-validate rules
	RuleName      = "name"      // missing or duplicate resource names
	RuleReference = "reference" // a name that points nowhere
	RuleListener  = "listener"  // listener rules (addresses, HTTP filters)
	RuleRoute     = "route"     // route configuration rules (domains)
)

// String formats the diagnostic compiler-style:
//
//	nodes/edge/routes.yaml:14:9: route "main" virtual_hosts[0].routes[2].route.cluster: cluster "api-v2" is not defined for node "edge"
//
// A warning reads "file:line:column: warning: …".
func (d Diagnostic) String() string {
	pos := d.Pos.String()
	if d.IsWarning() {
		pos += ": warning"
	}
	var subject []string
	if d.Type != "" {
		subject = append(subject, typeLabel(d.Type), strconv.Quote(d.Name))
	}
	if d.Field != "" {
		subject = append(subject, d.Field)
	}
	if len(subject) == 0 {
		return pos + ": " + d.Message
	}
	return pos + ": " + strings.Join(subject, " ") + ": " + d.Message
}

// SortDiagnostics orders diagnostics syntax errors first (the root cause
// of what follows), then by file, line, column and the rest, and drops
// exact duplicates.
func SortDiagnostics(ds []Diagnostic) []Diagnostic {
	slices.SortFunc(ds, func(a, b Diagnostic) int {
		return cmp.Or(
			cmp.Compare(syntaxRank(a), syntaxRank(b)),
			cmp.Compare(a.Pos.File, b.Pos.File),
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Column, b.Pos.Column),
			cmp.Compare(a.Node, b.Node),
			cmp.Compare(a.Type, b.Type),
			cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.Field, b.Field),
			cmp.Compare(a.Rule, b.Rule),
			cmp.Compare(a.Message, b.Message),
		)
	})
	return slices.Compact(ds)
}

func syntaxRank(d Diagnostic) int {
	if d.Rule == RuleSyntax {
		return 0
	}
	return 1
}

// Diagnostic output formats accepted by WriteDiagnostics.
const (
	FormatText   = "text"
	FormatJSON   = "json"
	FormatGitHub = "github"
)

// WriteDiagnostics writes diagnostics in format: "text" (one compiler-style
// line each), "json" (an array) or "github" (workflow commands that
// annotate a pull request).
func WriteDiagnostics(w io.Writer, format string, ds []Diagnostic) error {
	switch format {
	case FormatText, "":
		for _, d := range ds {
			if _, err := fmt.Fprintln(w, oneLine(d.String())); err != nil {
				return fmt.Errorf("write diagnostics: %w", err)
			}
		}
		return nil
	case FormatJSON:
		if ds == nil {
			ds = []Diagnostic{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(ds); err != nil {
			return fmt.Errorf("write diagnostics: %w", err)
		}
		return nil
	case FormatGitHub:
		for _, d := range ds {
			if _, err := io.WriteString(w, GitHubAnnotation(d)+"\n"); err != nil {
				return fmt.Errorf("write diagnostics: %w", err)
			}
		}
		return nil
	default:
		return fmt.Errorf("diagnostics format %q: want text, json or github", format)
	}
}

// GitHubAnnotation formats a diagnostic as a GitHub Actions workflow
// command, e.g. `::error file=a.yaml,line=3,col=5,title=reference::...`.
func GitHubAnnotation(d Diagnostic) string {
	var props []string
	if d.Pos.File != "" {
		props = append(props, "file="+escapeProperty(d.Pos.File))
	}
	if d.Pos.Line > 0 {
		props = append(props, "line="+strconv.Itoa(d.Pos.Line))
	}
	if d.Pos.Column > 0 {
		props = append(props, "col="+strconv.Itoa(d.Pos.Column))
	}
	title := "legate"
	if d.Rule != "" {
		title = "legate " + d.Rule
	}
	props = append(props, "title="+escapeProperty(title))
	msg := d.String()
	if d.Pos.File != "" {
		msg = strings.TrimPrefix(msg, d.Pos.String()+": ")
	}
	level := "error"
	if d.IsWarning() {
		level = "warning"
		msg = strings.TrimPrefix(msg, "warning: ")
	}
	return "::" + level + " " + strings.Join(props, ",") + "::" + escapeData(msg)
}

func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// oneLine escapes the control characters of a diagnostic's line (a file
// name may hold a newline, a message a quoted escape sequence): each
// diagnostic stays one line, and a repository's author cannot start a line
// of their own in a CI log (GitHub Actions reads any line beginning with
// "::" as a workflow command) nor send a terminal escape sequence.
func oneLine(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
