package cue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
)

// leaf is the compiled CUE constraint of a field's value, with the
// verdicts of the values seen so far.
type leaf struct {
	expr    string
	imports []string
	value   cue.Value
	err     error
	ready   bool
	// pass is the Go prefilter of the constraint (nil: none).
	pass passFunc
	// enum lists the quoted value names of an enum field, for messages.
	enum []string
	// verdicts maps a canonical value to CUE's message ("" when valid).
	verdicts map[string]string
}

// maxVerdicts bounds the verdicts kept per constraint.
const maxVerdicts = 1 << 16

// Schema is the generated Envoy schema of the fast check with what it
// learns as it runs: message tables and compiled constraints, built on
// first use, and the verdicts of the values seen. One Schema serves every
// Stage of a process's renders (NewStage), so that this work is done once;
// it is safe for concurrent use (checks are serialized, and only failed
// resources reach them on the render path).
type Schema struct {
	mu sync.Mutex
	c  *schemaCache
}

// NewSchema returns an empty Schema; it builds what it needs on first use.
func NewSchema() *Schema { return &Schema{} }

// with runs f with the schema's cache locked.
func (s *Schema) with(f func(c *schemaCache)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == nil {
		s.c = newSchemaCache(cuecontext.New(), NewGenerator(nil))
	}
	f(s.c)
}

// leaf returns the shared leaf of a generated expression.
func (c *schemaCache) leaf(e expr, imports map[string]bool) *leaf {
	names := make([]string, 0, len(imports))
	for imp := range imports {
		names = append(names, imp)
	}
	sort.Strings(names)
	key := strings.Join(names, ",") + "\x00" + e.text
	if l, ok := c.leaves[key]; ok {
		return l
	}
	l := &leaf{expr: e.text, imports: names, pass: e.pass()}
	c.leaves[key] = l
	return l
}

func (c *schemaCache) compile(l *leaf) {
	l.ready = true
	var b strings.Builder
	b.WriteString("package envoy\n\n")
	for _, imp := range l.imports {
		fmt.Fprintf(&b, "import %q\n", imp)
	}
	b.WriteString(anyDecl)
	b.WriteString("x: " + l.expr + "\n")
	v := c.ctx.CompileString(b.String(), cue.Filename("schema.cue"))
	if err := v.Err(); err != nil {
		l.err = fmt.Errorf("compile the schema of a field (%s): %w", l.expr, err)
		return
	}
	l.value = v.LookupPath(cue.ParsePath("x"))
}

// check returns CUE's message for v against the leaf, "" when it passes.
func (c *schemaCache) check(l *leaf, v any) string {
	switch l.expr {
	case "_":
		return ""
	case "string":
		if _, ok := v.(string); ok {
			return ""
		}
	case "bool":
		if _, ok := v.(bool); ok {
			return ""
		}
	}
	if l.pass != nil && l.pass(v) {
		return ""
	}
	key := canonical(v)
	if msg, ok := l.verdicts[key]; ok {
		return msg
	}
	if !l.ready {
		c.compile(l)
	}
	if l.err != nil {
		return l.err.Error()
	}
	msg := ""
	if err := l.value.Unify(c.ctx.BuildExpr(toExpr(v))).Validate(cue.Concrete(true)); err != nil {
		var msgs []string
		for _, e := range cueerrors.Errors(err) {
			format, args := e.Msg()
			msgs = append(msgs, fmt.Sprintf(format, args...))
		}
		msg = bestMessage(msgs)
		if len(l.enum) > 0 && strings.Contains(msg, "matches none") {
			msg = fmt.Sprintf("invalid value %s: want one of %s", display(v), strings.Join(l.enum, " | "))
		}
	}
	if l.verdicts == nil || len(l.verdicts) >= maxVerdicts {
		l.verdicts = map[string]string{}
	}
	l.verdicts[key] = msg
	return msg
}

// canonical is a key for a JSON value: equal values give equal keys.
func canonical(v any) string {
	switch x := v.(type) {
	case string:
		return "s" + x
	case json.Number:
		return "n" + string(x)
	case bool:
		if x {
			return "t"
		}
		return "f"
	case nil:
		return "z"
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return "j" + string(data)
}

// validateFast checks a resource in its JSON form against the schema of
// typeName with the table walker.
func (c *schemaCache) validateFast(typeName string, value any) []SchemaError {
	md, err := c.gen.Lookup(typeName)
	if err != nil {
		return []SchemaError{{Message: err.Error()}}
	}
	w := &walker{c: c}
	w.message(md, value, nil)
	out := make([]SchemaError, 0, len(w.out))
	for _, e := range w.out {
		out = append(out, SchemaError{Field: fieldPath(e.segs), Message: e.msg})
	}
	return out
}

// parseJSON decodes a resource keeping numbers exact.
func parseJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("parse resource: %w", err)
	}
	return v, nil
}
