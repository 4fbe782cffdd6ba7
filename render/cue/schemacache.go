package cue

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"cuelang.org/go/cue"
	cueerrors "cuelang.org/go/cue/errors"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// schemaCache holds one compiled CUE definition per message type, built on
// first use from the descriptors. It is not safe for concurrent use.
type schemaCache struct {
	ctx  *cue.Context
	gen  *Generator
	defs map[protoreflect.FullName]cue.Value
	// tables and leaves serve the fast check (fastschema.go).
	tables map[protoreflect.FullName]*msgTable
	leaves map[string]*leaf
}

func newSchemaCache(ctx *cue.Context, gen *Generator) *schemaCache {
	return &schemaCache{
		ctx: ctx, gen: gen, defs: map[protoreflect.FullName]cue.Value{},
		tables: map[protoreflect.FullName]*msgTable{}, leaves: map[string]*leaf{},
	}
}

// definition returns the compiled definition of a message type.
func (c *schemaCache) definition(typeName string) (cue.Value, error) {
	md, err := c.gen.Lookup(typeName)
	if err != nil {
		return cue.Value{}, err
	}
	if def, ok := c.defs[md.FullName()]; ok {
		return def, nil
	}
	v := c.ctx.CompileString(c.gen.Source(md, "envoy", false), cue.Filename(string(md.FullName())+".cue"))
	if err := v.Err(); err != nil {
		return cue.Value{}, fmt.Errorf("compile generated schema of %s: %w", md.FullName(), err)
	}
	def := v.LookupPath(cue.ParsePath(DefName(md.FullName())))
	c.defs[md.FullName()] = def
	return def, nil
}

// SchemaError is one place where a value does not satisfy the schema.
type SchemaError struct {
	// Field is the path in the renderer's syntax (virtual_hosts[0].name).
	Field   string
	Message string
}

// validate checks a resource in its JSON mapping (decoded into Go maps,
// slices and scalars) against the schema of typeName, resource by
// resource: every Any inside is checked against the schema of the type its
// "@type" names, so no definition ever holds a disjunction of all types.
func (c *schemaCache) validate(typeName string, value any) []SchemaError {
	var out []SchemaError
	c.validateAt(typeName, value, nil, &out)
	return out
}

func (c *schemaCache) validateAt(typeName string, value any, prefix []string, out *[]SchemaError) {
	def, err := c.definition(typeName)
	if err != nil {
		*out = append(*out, SchemaError{Field: fieldPath(prefix), Message: err.Error()})
		return
	}
	data := c.ctx.BuildExpr(toExpr(value))
	err = def.UnifyAccept(data, def).Validate(cue.Concrete(true))
	// Group by field: a disjunction reports one error per arm.
	var order []string
	msgs := map[string][]string{}
	for _, e := range cueerrors.Errors(err) {
		segs := e.Path()
		if len(segs) > 0 && strings.HasPrefix(segs[0], "#") {
			segs = segs[1:]
		}
		format, args := e.Msg()
		msg := fmt.Sprintf(format, args...)
		if name, ok := strings.CutPrefix(msg, "field not allowed: "); ok {
			segs = append(segs, name)
			msg = "field not allowed"
		}
		field := fieldPath(append(append([]string(nil), prefix...), segs...))
		if _, ok := msgs[field]; !ok {
			order = append(order, field)
		}
		msgs[field] = append(msgs[field], msg)
	}
	// matchN reports the required fields of its arms too: keep only the
	// oneof message for them.
	oneofAt := map[string]bool{}
	for field, ms := range msgs {
		if strings.Contains(ms[0], "matchN") {
			oneofAt[field] = true
		}
	}
	for _, field := range order {
		msg := bestMessage(msgs[field])
		parent := field[:max(strings.LastIndexAny(field, ".["), 0)]
		if msg == "field is required but not present" && oneofAt[parent] {
			continue
		}
		*out = append(*out, SchemaError{Field: field, Message: msg})
	}
	// Check the packed messages of every Any.
	walkAnys(value, prefix, func(path []string, typeURL string, fields map[string]any) {
		name := typeURL[strings.LastIndex(typeURL, "/")+1:]
		if strings.HasPrefix(name, "google.protobuf.") {
			return // well-known types packed in an Any keep their own JSON form.
		}
		c.validateAt(name, fields, path, out)
	})
}

// walkAnys calls f for every Any directly below value (not inside another
// Any: those are reached when the outer one is validated).
func walkAnys(value any, path []string, f func([]string, string, map[string]any)) {
	switch x := value.(type) {
	case map[string]any:
		for k, v := range x {
			p := append(append([]string(nil), path...), k)
			if m, ok := v.(map[string]any); ok {
				if url, ok := m["@type"].(string); ok {
					rest := make(map[string]any, len(m))
					for mk, mv := range m {
						if mk != "@type" {
							rest[mk] = mv
						}
					}
					f(p, url, rest)
					continue
				}
			}
			walkAnys(v, p, f)
		}
	case []any:
		for i, v := range x {
			p := append(append([]string(nil), path...), fmt.Sprint(i))
			if m, ok := v.(map[string]any); ok {
				if url, ok := m["@type"].(string); ok {
					rest := make(map[string]any, len(m))
					for mk, mv := range m {
						if mk != "@type" {
							rest[mk] = mv
						}
					}
					f(p, url, rest)
					continue
				}
			}
			walkAnys(v, p, f)
		}
	}
}

// bestMessage picks the most telling of CUE's messages about one field and
// removes the generated definition names from it.
func bestMessage(msgs []string) string {
	msg := strings.TrimSuffix(msgs[0], ":")
	if strings.Contains(msg, "errors in empty disjunction") {
		msg = "value matches none of the allowed types or values"
		for _, m := range msgs[1:] {
			if strings.Contains(m, "out of bound") || strings.Contains(m, "does not satisfy") {
				msg = m
				break
			}
		}
	}
	if strings.HasPrefix(msg, "invalid value") && strings.Contains(msg, "matchN") {
		return "set at most one field of a oneof (exactly one when it is required), in one spelling"
	}
	return definitionName.ReplaceAllString(msg, "")
}

var definitionName = regexp.MustCompile(`#envoy_[A-Za-z0-9_]*\.?`)

// ValidateJSON checks one resource in Envoy's JSON (or YAML-as-JSON) form
// against the generated schema of typeURL (a type URL, full or short
// name), Any by Any, and returns every violation with CUE's message. Fields
// set to null count as unset, as protojson reads them. It is safe for
// concurrent use.
func (s *Stage) ValidateJSON(typeURL string, data []byte) ([]SchemaError, error) {
	value, err := parseJSON(data)
	if err != nil {
		return nil, err
	}
	var out []SchemaError
	s.fast.with(func(c *schemaCache) { out = c.validateFast(typeURL, value) })
	return out, nil
}

// validateWhole checks a resource by unifying it with the whole closed
// definition of its type: CUE's own evaluation of the generated schema.
// It is the reference the fast check is tested against.
func (s *Stage) validateWhole(typeURL string, data []byte) ([]SchemaError, error) {
	var value any
	if err := json.Unmarshal(data, &value); err != nil {
		return nil, fmt.Errorf("parse resource: %w", err)
	}
	return s.schemas.validate(typeURL, dropNulls(value)), nil
}

func dropNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil {
				delete(x, k)
				continue
			}
			x[k] = dropNulls(e)
		}
	case []any:
		for i, e := range x {
			x[i] = dropNulls(e)
		}
	}
	return v
}
