package cue

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/envoyproxy/protoc-gen-validate/validate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The fast schema check walks a resource's JSON value with a table per
// message built from the same descriptors and rule translation as the
// generated schema. The structure (closed structs, both spellings,
// required fields, oneofs, list and map sizes) is checked in Go; every
// leaf value is unified with its field's compiled CUE constraint, once per
// distinct (constraint, value) pair. Unifying whole closed definitions
// instead costs milliseconds per resource (docs/benchmarks.md, "## cue").

// msgTable is the schema of one message.
type msgTable struct {
	name   protoreflect.FullName
	fields map[string]*fieldTable // by every accepted spelling
	// required lists the fields that must be present, by spellings.
	required [][]string
	oneofs   []oneofGroup
}

type oneofGroup struct {
	name     string
	members  map[string]string // spelling → proto name
	names    []string          // proto names, in declaration order
	required bool
}

// fieldTable is the schema of one field.
type fieldTable struct {
	proto string
	list  bool
	isMap bool
	// msg names the element message when it is checked field by field.
	msg protoreflect.MessageDescriptor
	// any is set for google.protobuf.Any elements.
	any bool
	// elem checks scalar and well-known elements, and the "@type" of Any.
	elem *leaf
	// key checks map keys (nil: any string).
	key *leaf
	// size holds list.MinItems/MaxItems/UniqueItems or struct.MinFields/
	// MaxFields, checked in Go first and by CUE for the message.
	size     *leaf
	min, max int
	unique   bool
	// emptyOK: repeated ignore_empty, an empty list passes.
	emptyOK bool
}

// table returns the schema table of a message, building it on first use.
func (c *schemaCache) table(md protoreflect.MessageDescriptor) *msgTable {
	if t, ok := c.tables[md.FullName()]; ok {
		return t
	}
	t := &msgTable{name: md.FullName(), fields: map[string]*fieldTable{}}
	c.tables[md.FullName()] = t
	disabled := proto.GetExtension(md.Options(), validate.E_Disabled).(bool) ||
		proto.GetExtension(md.Options(), validate.E_Ignored).(bool)
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		var rules *validate.FieldRules
		if !disabled {
			if r, ok := proto.GetExtension(fd.Options(), validate.E_Rules).(*validate.FieldRules); ok && r != nil {
				rules = r
			}
		}
		ft, required := c.field(md, fd, rules)
		names := spellings(fd)
		for _, n := range names {
			t.fields[n] = ft
		}
		od := fd.ContainingOneof()
		if required && (od == nil || od.IsSynthetic()) {
			t.required = append(t.required, names)
		}
	}
	oneofs := md.Oneofs()
	for i := range oneofs.Len() {
		od := oneofs.Get(i)
		if od.IsSynthetic() {
			continue
		}
		g := oneofGroup{name: string(od.Name()), members: map[string]string{}}
		g.required = !disabled && proto.GetExtension(od.Options(), validate.E_Required).(bool)
		for j := range od.Fields().Len() {
			fd := od.Fields().Get(j)
			g.names = append(g.names, string(fd.Name()))
			for _, n := range spellings(fd) {
				g.members[n] = string(fd.Name())
			}
		}
		t.oneofs = append(t.oneofs, g)
	}
	return t
}

// field builds the table of one field with the generator's translation of
// its rules, and reports whether it is required.
func (c *schemaCache) field(md protoreflect.MessageDescriptor, fd protoreflect.FieldDescriptor, rules *validate.FieldRules) (*fieldTable, bool) {
	b := &builder{md: md, refs: map[protoreflect.FullName]bool{}, imports: map[string]bool{}}
	_, required := b.fieldExpr(fd, rules)
	ft := &fieldTable{proto: string(fd.Name()), list: fd.IsList(), isMap: fd.IsMap()}
	elemFD, elemRules := fd, rules
	switch {
	case fd.IsMap():
		elemFD = fd.MapValue()
		mr := rules.GetMap()
		elemRules = mr.GetValues()
		if kr := mr.GetKeys(); kr != nil && fd.MapKey().Kind() == protoreflect.StringKind {
			kb := &builder{md: md, refs: map[protoreflect.FullName]bool{}, imports: map[string]bool{}}
			if sc := kb.stringRules(fd, kr.GetString_()); len(sc) > 0 {
				ft.key = c.leaf(withRules("string", sc, false, ""), kb.imports)
			}
		}
		if mr != nil && (mr.MinPairs != nil || mr.MaxPairs != nil) {
			var cons []string
			cons, ft.min, ft.max = mapSize(mr)
			ft.size = c.leaf(raw("{...} & "+strings.Join(cons, " & ")), map[string]bool{"struct": true})
			ft.emptyOK = mr.GetIgnoreEmpty()
		}
	case fd.IsList():
		rr := rules.GetRepeated()
		elemRules = rr.GetItems()
		if rr != nil && (rr.MinItems != nil || rr.MaxItems != nil || rr.GetUnique()) {
			var cons []string
			cons, ft.min, ft.max = listSize(rr)
			ft.unique = rr.GetUnique()
			ft.size = c.leaf(raw("[...] & "+strings.Join(cons, " & ")), map[string]bool{"list": true})
			ft.emptyOK = rr.GetIgnoreEmpty()
		}
	}
	eb := &builder{md: md, refs: map[protoreflect.FullName]bool{}, imports: map[string]bool{}}
	if elemFD.Kind() == protoreflect.MessageKind || elemFD.Kind() == protoreflect.GroupKind {
		em := elemFD.Message()
		e, wkt := eb.wellKnown(em.FullName(), elemFD, elemRules)
		switch {
		case em.FullName() == anyName:
			ft.any = true
			ft.elem = c.leaf(e, eb.imports)
		case wkt:
			ft.elem = c.leaf(e, eb.imports)
		case elemRules.GetMessage().GetSkip():
			ft.elem = c.leaf(raw("{...}"), nil)
		default:
			ft.msg = em
		}
		return ft, required
	}
	ft.elem = c.leaf(eb.elemExpr(elemFD, elemRules), eb.imports)
	if elemFD.Kind() == protoreflect.EnumKind {
		ft.elem.enum = enumNames.FindAllString(ft.elem.expr, -1)
	}
	return ft, required
}

const anyName = "google.protobuf.Any"

// enumNames finds the value names in an enum's expression.
var enumNames = regexp.MustCompile(`"[A-Za-z0-9_]+"`)

// schemaError is a violation at a path of JSON segments (field names as
// written, list indices as numbers).
type schemaError struct {
	segs []string
	msg  string
}

// checker walks one JSON value.
type walker struct {
	c   *schemaCache
	out []schemaError
}

func (w *walker) fail(path []string, format string, args ...any) {
	w.out = append(w.out, schemaError{segs: slices.Clone(path), msg: fmt.Sprintf(format, args...)})
}

func (w *walker) leaf(l *leaf, v any, path []string) {
	if msg := w.c.check(l, v); msg != "" {
		w.fail(path, "%s", msg)
	}
}

// message checks an object against a message table.
func (w *walker) message(md protoreflect.MessageDescriptor, v any, path []string) {
	obj, ok := v.(map[string]any)
	if !ok {
		w.fail(path, "%s", mismatch(v, "struct"))
		return
	}
	t := w.c.table(md)
	keys := make([]string, 0, len(obj))
	for k, x := range obj {
		if x != nil {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	seen := map[string]string{} // proto name → spelling used
	for _, k := range keys {
		p := append(path, k)
		ft := t.fields[k]
		if ft == nil {
			w.fail(p, "field not allowed")
			continue
		}
		if other, dup := seen[ft.proto]; dup {
			w.fail(p, "field %s is also set as %s: set one spelling", k, other)
			continue
		}
		seen[ft.proto] = k
		w.field(ft, obj[k], p)
	}
	for _, names := range t.required {
		if _, ok := seen[names[0]]; !ok {
			w.fail(append(path, names[0]), "field is required but not present")
		}
	}
	for _, g := range t.oneofs {
		var set []string
		for _, n := range g.names {
			if spelling, ok := seen[n]; ok {
				set = append(set, spelling)
			}
		}
		switch {
		case len(set) > 1:
			w.fail(path, "fields %s are set but belong to one oneof (%s): set at most one", strings.Join(set, ", "), g.name)
		case len(set) == 0 && g.required:
			w.fail(path, "oneof %s is required: set one of %s", g.name, strings.Join(g.names, ", "))
		}
	}
}

func (w *walker) field(ft *fieldTable, v any, path []string) {
	switch {
	case ft.list:
		list, ok := v.([]any)
		if !ok {
			w.fail(path, "%s", mismatch(v, "list"))
			return
		}
		if ft.size != nil && !(ft.emptyOK && len(list) == 0) && sizeFails(ft, len(list), list) {
			w.leaf(ft.size, v, path)
		}
		for i, e := range list {
			w.elem(ft, e, append(path, strconv.Itoa(i)))
		}
	case ft.isMap:
		obj, ok := v.(map[string]any)
		if !ok {
			w.fail(path, "%s", mismatch(v, "struct"))
			return
		}
		if ft.size != nil && !(ft.emptyOK && len(obj) == 0) && sizeFails(ft, len(obj), nil) {
			w.leaf(ft.size, v, path)
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := append(path, k)
			if ft.key != nil {
				w.leaf(ft.key, k, p)
			}
			w.elem(ft, obj[k], p)
		}
	default:
		w.elem(ft, v, path)
	}
}

func (w *walker) elem(ft *fieldTable, v any, path []string) {
	switch {
	case ft.msg != nil:
		w.message(ft.msg, v, path)
	case ft.any:
		w.anyValue(ft, v, path)
	default:
		w.leaf(ft.elem, v, path)
	}
}

// anyValue checks an Any: its "@type" against the field's rules, then the
// packed fields against the schema of the type it names.
func (w *walker) anyValue(ft *fieldTable, v any, path []string) {
	obj, ok := v.(map[string]any)
	if !ok {
		w.fail(path, "%s", mismatch(v, "struct"))
		return
	}
	url, ok := obj["@type"].(string)
	if !ok {
		w.fail(append(path, "@type"), "field is required but not present")
		return
	}
	w.leaf(ft.elem, map[string]any{"@type": url}, path)
	name := url[strings.LastIndex(url, "/")+1:]
	if strings.HasPrefix(name, "google.protobuf.") {
		return // well-known types packed in an Any keep their own JSON form.
	}
	md, err := w.c.gen.Lookup(name)
	if err != nil && strings.Contains(name, ".v2.") {
		return // the renderer says that v2 was removed and what to use.
	}
	if err != nil {
		w.fail(append(path, "@type"), "%v", err)
		return
	}
	rest := make(map[string]any, len(obj))
	for k, x := range obj {
		if k != "@type" {
			rest[k] = x
		}
	}
	w.message(md, rest, path)
}

// sizeFails is the Go precheck of a list or map size rule: CUE is asked
// for its message only when it fails.
func sizeFails(ft *fieldTable, n int, list []any) bool {
	if (ft.min >= 0 && n < ft.min) || (ft.max >= 0 && n > ft.max) {
		return true
	}
	if ft.unique && list != nil {
		seen := map[string]bool{}
		for _, e := range list {
			k := canonical(e)
			if seen[k] {
				return true
			}
			seen[k] = true
		}
	}
	return false
}

// mismatch is CUE's wording for a value of the wrong kind.
func mismatch(v any, want string) string {
	return fmt.Sprintf("conflicting values %s and %s (mismatched types %s and %s)", display(v), want, kindOf(v), want)
}

func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "struct"
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "bool"
	case nil:
		return "null"
	}
	return "number"
}
