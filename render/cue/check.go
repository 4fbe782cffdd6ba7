package cue

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"

	"github.com/legate-dev/legate/render"
)

// Stage is the CUE stage of one render: it reads the CUE packages and the
// policies of a tree (Generate) and checks every decoded resource against
// the policies (Check). Put the same Stage in render.Options.Generators and
// render.Options.Checks. A Stage serves one render at a time; make a new one
// per render.
type Stage struct {
	ctx      *cue.Context
	gen      *Generator
	schemas  *schemaCache
	fast     *Schema
	policies []*policy
	// fixed are policies every render obeys besides the tree's own (the
	// cluster's, on Kubernetes): path → source.
	fixed map[string][]byte
}

// New returns a Stage with no policies loaded and a Schema of its own.
// A process that renders more than once shares one Schema (NewStage).
func New() *Stage { return NewStage(NewSchema()) }

// NewStage returns a Stage with no policies loaded whose fast schema check
// uses schema, shared with other stages.
func NewStage(schema *Schema) *Stage {
	ctx := cuecontext.New()
	gen := NewGenerator(nil)
	return &Stage{ctx: ctx, gen: gen, schemas: newSchemaCache(ctx, gen), fast: schema}
}

// WithPolicies makes every render of the stage obey policies (path →
// source) besides those of its tree, so that a configuration cannot leave
// out the rules its home imposes. It returns s.
func (s *Stage) WithPolicies(policies map[string][]byte) *Stage {
	s.fixed = policies
	return s
}

// Generate loads the policies under policy/ of the tree and evaluates the
// CUE packages of the tree (see docs/cue.md): it returns one JSON document
// per configuration document their concrete values hold, whose positions
// map back to the .cue files. Syntax, evaluation and concreteness errors
// are its diagnostics. It implements render.Generator so that the
// renderer hands it the tree before decoding.
func (s *Stage) Generate(fsys fs.FS) ([]render.Document, []render.Diagnostic) {
	s.policies = nil
	diags := s.compilePolicies(s.fixed)
	if fsys == nil {
		return nil, diags
	}
	diags = append(diags, s.loadPolicies(fsys, PolicyDir)...)
	docs, more := s.packages(fsys)
	return docs, append(diags, more...)
}

// LoadPolicies compiles policy files given as path → content; it is how the
// Kubernetes home and tests hand policies over without a tree.
func (s *Stage) LoadPolicies(files map[string][]byte) []render.Diagnostic {
	return s.compilePolicies(files)
}

// Check unifies every resource with the policies that select its nodes and
// type. It implements render.Check.
func (s *Stage) Check(resources []*render.Decoded) []render.Diagnostic {
	var diags []render.Diagnostic
	for _, p := range s.policies {
		for _, r := range p.rules {
			r.verdicts = nil // verdicts are shared within one Check only.
		}
		for _, d := range resources {
			r := p.rules[d.TypeURL]
			if r == nil {
				continue
			}
			nodes := p.appliesTo(d.Nodes)
			if len(nodes) == 0 {
				continue
			}
			diags = append(diags, s.checkOne(p, r, d, nodes)...)
		}
	}
	return diags
}

// violation is one field of a resource that breaks a rule.
type violation struct {
	segs      []string
	msg       string
	positions []token.Pos
}

func (s *Stage) checkOne(p *policy, r *rule, d *render.Decoded, nodes []string) []render.Diagnostic {
	value := normalize(d.Message.ProtoReflect(), r.keep)
	folded, info := dedupe(value, r.keep)
	// Resources that look the same to the rule get the same verdict:
	// evaluate each distinct one once.
	var found []*violation
	key, err := json.Marshal(folded)
	if cached, ok := r.verdicts[string(key)]; ok && err == nil {
		found = cached
	} else {
		found = s.evaluate(r, folded)
		if err == nil {
			if r.verdicts == nil {
				r.verdicts = map[string][]*violation{}
			}
			r.verdicts[string(key)] = found
		}
	}
	var order []string
	byField := map[string]*violation{}
	for _, v := range found {
		for _, segs := range info.expand(v.segs) {
			field := fieldPath(segs)
			if byField[field] == nil {
				byField[field] = &violation{segs: segs, msg: v.msg}
				order = append(order, field)
			}
			byField[field].positions = append(byField[field].positions, v.positions...)
		}
	}
	diags := make([]render.Diagnostic, 0, len(order))
	for _, field := range order {
		v := byField[field]
		diag := d.Diagnose(field, RulePolicy, policyMessage(p, v.msg, v.positions, lookup(value, v.segs)))
		if len(nodes) == 1 {
			diag.Node = nodes[0]
		}
		diags = append(diags, diag)
	}
	return diags
}

// evaluate unifies a rule with a (folded) resource value and returns CUE's
// errors grouped by field: a disjunction reports one error per arm.
func (s *Stage) evaluate(r *rule, folded any) []*violation {
	err := r.value.Unify(s.ctx.BuildExpr(toExpr(folded))).Validate(cue.Concrete(true))
	if err == nil {
		return nil
	}
	var out []*violation
	byField := map[string]*violation{}
	for _, e := range cueerrors.Errors(err) {
		segs := e.Path()
		if len(segs) > 0 && segs[0] == r.key {
			segs = segs[1:]
		}
		field := fieldPath(segs)
		v := byField[field]
		if v == nil {
			format, args := e.Msg()
			v = &violation{segs: segs, msg: fmt.Sprintf(format, args...)}
			byField[field] = v
			out = append(out, v)
		}
		v.positions = append(v.positions, cueerrors.Positions(e)...)
	}
	return out
}

// policyMessage explains a violation: the value, the rule's place and text,
// and CUE's own words.
func policyMessage(p *policy, msg string, positions []token.Pos, value any) string {
	if strings.Contains(msg, "errors in empty disjunction") {
		msg = "matches none of the allowed values"
	}
	msg = strings.TrimSuffix(msg, ":")
	where := p.file
	if pos, ok := p.rulePos(positions); ok {
		where = fmt.Sprintf("%s:%d:%d", p.file, pos.Line(), pos.Column())
		if text := p.constraintText(pos); text != "" {
			where += ": " + text
		}
	}
	if value == nil {
		return fmt.Sprintf("missing, but policy requires it (%s)", where)
	}
	return fmt.Sprintf("%s breaks policy (%s): %s", display(value), where, msg)
}

// display formats a normalized value for a message.
func display(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case seconds:
		return strconv.FormatFloat(float64(x), 'f', -1, 64) + "s"
	case map[string]any:
		return "{...}"
	case []any:
		return fmt.Sprintf("[%d items]", len(x))
	}
	return fmt.Sprint(v)
}

// lookup follows a CUE error path through a normalized value; nil when the
// value is absent.
func lookup(v any, segs []string) any {
	for _, s := range segs {
		switch x := v.(type) {
		case map[string]any:
			v = x[unquoteLabel(s)]
		case []any:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// fieldPath writes CUE path segments in the renderer's field syntax:
// virtual_hosts[0].routes[2].route.cluster, metadata["key"].
func fieldPath(segs []string) string {
	var b strings.Builder
	for _, s := range segs {
		if _, err := strconv.Atoi(s); err == nil {
			b.WriteString("[" + s + "]")
			continue
		}
		s = unquoteLabel(s)
		if label(s) != s || strings.ContainsAny(s, ".[]@") {
			b.WriteString("[" + strconv.Quote(s) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

// cueDiagnostics turns CUE errors into diagnostics at their first position.
func cueDiagnostics(err error, rule, prefix string) []render.Diagnostic {
	var out []render.Diagnostic
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		msg := fmt.Sprintf(format, args...)
		if p := e.Path(); len(p) > 0 {
			msg = fieldPath(p) + ": " + msg
		}
		var pos token.Pos
		if ps := cueerrors.Positions(e); len(ps) > 0 {
			pos = ps[0]
		}
		out = append(out, posDiag(pos, rule, prefix+": "+msg))
	}
	return out
}

func posDiag(pos token.Pos, rule, msg string) render.Diagnostic {
	return render.Diagnostic{
		Pos:  render.Position{File: pos.Filename(), Line: pos.Line(), Column: pos.Column()},
		Rule: rule, Message: msg,
	}
}

func unquoteLabel(s string) string {
	if u, err := strconv.Unquote(s); err == nil && strings.HasPrefix(s, `"`) {
		return u
	}
	return s
}
