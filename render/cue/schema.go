package cue

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/envoyproxy/protoc-gen-validate/validate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/legate-dev/legate/render"
)

// Generator writes CUE definitions for protobuf messages from their
// descriptors. It is safe for concurrent use.
type Generator struct {
	files *protoregistry.Files

	mu   sync.Mutex
	defs map[protoreflect.FullName]*definition
}

// definition is the generated CUE of one message.
type definition struct {
	name protoreflect.FullName
	// text is the CUE declaration "#ident: {...}".
	text string
	// refs are the messages the definition refers to.
	refs []protoreflect.FullName
	// imports are the CUE packages the text uses.
	imports []string
	// untranslated lists the validation rules CUE does not check.
	untranslated []string
}

// NewGenerator returns a generator over files; nil means
// protoregistry.GlobalFiles.
func NewGenerator(files *protoregistry.Files) *Generator {
	if files == nil {
		files = protoregistry.GlobalFiles
	}
	return &Generator{files: files, defs: map[protoreflect.FullName]*definition{}}
}

// DefName is the CUE definition identifier of a message: its full name
// with dots replaced, for example #envoy_config_cluster_v3_Cluster.
func DefName(name protoreflect.FullName) string {
	return "#" + strings.ReplaceAll(string(name), ".", "_")
}

// Lookup resolves a message by full name ("envoy.config.cluster.v3.Cluster"),
// type URL, or unique short name ("Cluster"). Short names that several
// messages share are reported with the candidates.
func (g *Generator) Lookup(name string) (protoreflect.MessageDescriptor, error) {
	name = strings.TrimPrefix(name, "type.googleapis.com/")
	if d, err := g.files.FindDescriptorByName(protoreflect.FullName(name)); err == nil {
		if md, ok := d.(protoreflect.MessageDescriptor); ok {
			return md, nil
		}
		return nil, fmt.Errorf("%s is not a message", name)
	}
	var found []protoreflect.MessageDescriptor
	g.files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		walkMessages(fd.Messages(), func(md protoreflect.MessageDescriptor) {
			if string(md.Name()) == name || strings.HasSuffix(string(md.FullName()), "."+name) {
				found = append(found, md)
			}
		})
		return true
	})
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) == 0:
		return nil, fmt.Errorf("no message type named %q is registered: give a full name like envoy.config.cluster.v3.Cluster", name)
	}
	// Prefer top-level messages, then Envoy v3 API messages, over others of
	// the same short name.
	for _, keep := range []func(protoreflect.MessageDescriptor) bool{
		func(md protoreflect.MessageDescriptor) bool {
			_, top := md.Parent().(protoreflect.FileDescriptor)
			return top && string(md.Name()) == name
		},
		func(md protoreflect.MessageDescriptor) bool {
			return strings.HasPrefix(string(md.FullName()), "envoy.") && strings.Contains(string(md.FullName()), ".v3.")
		},
	} {
		var kept []protoreflect.MessageDescriptor
		for _, md := range found {
			if keep(md) {
				kept = append(kept, md)
			}
		}
		if len(kept) == 1 {
			return kept[0], nil
		}
		if len(kept) > 1 {
			found = kept
		}
	}
	names := make([]string, 0, len(found))
	for _, md := range found {
		names = append(names, string(md.FullName()))
	}
	sort.Strings(names)
	return nil, fmt.Errorf("%q is ambiguous, give one of: %s", name, strings.Join(names, ", "))
}

func walkMessages(mds protoreflect.MessageDescriptors, f func(protoreflect.MessageDescriptor)) {
	for i := range mds.Len() {
		md := mds.Get(i)
		if md.IsMapEntry() {
			continue
		}
		f(md)
		walkMessages(md.Messages(), f)
	}
}

// Closure returns the definitions of md and of every message it refers to,
// md first, the rest sorted by name.
func (g *Generator) Closure(md protoreflect.MessageDescriptor) []*definition {
	seen := map[protoreflect.FullName]bool{md.FullName(): true}
	queue := []protoreflect.MessageDescriptor{md}
	var out []*definition
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		def := g.definition(cur)
		out = append(out, def)
		for _, ref := range def.refs {
			if seen[ref] {
				continue
			}
			seen[ref] = true
			d, err := g.files.FindDescriptorByName(ref)
			if err != nil {
				continue
			}
			queue = append(queue, d.(protoreflect.MessageDescriptor))
		}
	}
	slices.SortFunc(out[1:], func(a, b *definition) int { return strings.Compare(string(a.name), string(b.name)) })
	return out
}

// Source returns a self-contained CUE file (package name pkg) with the
// definition of md and everything it refers to. When alias is set, the file
// also declares #<ShortName> for md.
func (g *Generator) Source(md protoreflect.MessageDescriptor, pkg string, alias bool) string {
	defs := g.Closure(md)
	imports := map[string]bool{}
	for _, d := range defs {
		for _, imp := range d.imports {
			imports[imp] = true
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// Code generated by legate from the protobuf descriptors of %s. DO NOT EDIT.\n\n", md.FullName())
	fmt.Fprintf(&b, "package %s\n\n", pkg)
	if len(imports) > 0 {
		names := make([]string, 0, len(imports))
		for imp := range imports {
			names = append(names, imp)
		}
		sort.Strings(names)
		b.WriteString("import (\n")
		for _, imp := range names {
			fmt.Fprintf(&b, "\t%q\n", imp)
		}
		b.WriteString(")\n\n")
	}
	if alias {
		fmt.Fprintf(&b, "#%s: %s\n\n", md.Name(), DefName(md.FullName()))
	}
	b.WriteString(anyDecl)
	for _, d := range defs {
		b.WriteString(d.text)
		b.WriteString("\n")
	}
	return b.String()
}

// Untranslated lists, for md and the messages it refers to, the validation
// rules that the CUE schema does not express ("message.field: rule").
func (g *Generator) Untranslated(md protoreflect.MessageDescriptor) []string {
	var out []string
	for _, d := range g.Closure(md) {
		out = append(out, d.untranslated...)
	}
	sort.Strings(out)
	return out
}

// anyDecl is the schema of google.protobuf.Any in its JSON mapping: the
// type URL and the fields of the packed message inline. The packed fields
// are checked against the schema of the named type by the validator, which
// looks the type up per value instead of unifying with a disjunction of
// every registered type.
const anyDecl = `// #Any is google.protobuf.Any in its JSON mapping. legate checks the
// packed fields against the schema of the type "@type" names.
#Any: {
	"@type"!: =~"^[^/]*/[A-Za-z_][A-Za-z0-9_.]*$"
	...
}

`

func (g *Generator) definition(md protoreflect.MessageDescriptor) *definition {
	g.mu.Lock()
	defer g.mu.Unlock()
	if d, ok := g.defs[md.FullName()]; ok {
		return d
	}
	d := buildDefinition(md)
	g.defs[md.FullName()] = d
	return d
}

// builder accumulates one message definition.
type builder struct {
	md           protoreflect.MessageDescriptor
	refs         map[protoreflect.FullName]bool
	imports      map[string]bool
	untranslated []string
	disabled     bool
	// requiredPairs are required fields with two spellings: exactly one of
	// the two must be present.
	requiredPairs [][]string
}

// resourceTypes are the messages a document may hold with "@type" at the
// top: the xDS resource types and the bootstrap.
var resourceTypes = func() map[protoreflect.FullName]bool {
	m := map[protoreflect.FullName]bool{"envoy.config.bootstrap.v3.Bootstrap": true}
	for _, url := range render.TypeURLs() {
		m[protoreflect.FullName(url[strings.LastIndex(url, "/")+1:])] = true
	}
	return m
}()

func buildDefinition(md protoreflect.MessageDescriptor) *definition {
	b := &builder{md: md, refs: map[protoreflect.FullName]bool{}, imports: map[string]bool{}}
	b.disabled = proto.GetExtension(md.Options(), validate.E_Disabled).(bool) ||
		proto.GetExtension(md.Options(), validate.E_Ignored).(bool)
	var body strings.Builder
	if resourceTypes[md.FullName()] {
		// A resource may say its type, as in a YAML file or filesystem xDS.
		fmt.Fprintf(&body, "\t\"@type\"?: %q\n", "type.googleapis.com/"+string(md.FullName()))
	}
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		b.field(&body, fd)
	}
	var groups strings.Builder
	b.oneofs(&groups)
	d := &definition{name: md.FullName(), untranslated: b.untranslated}
	if wkt, ok := b.wellKnown(md.FullName(), nil, nil); ok {
		// Well-known types are written inline where they are used; the
		// named form exists for `legate schema google.protobuf.Duration`.
		d.text = fmt.Sprintf("%s: %s\n", DefName(md.FullName()), wkt.text)
	} else {
		// close() keeps the struct closed when it is unified with the
		// matchN validators of its oneofs (an embedded validator would
		// open it).
		if groups.Len() > 0 {
			d.text = fmt.Sprintf("// %s\n%s: close({\n%s}) & %s\n", md.FullName(), DefName(md.FullName()), body.String(), groups.String())
		} else {
			d.text = fmt.Sprintf("// %s\n%s: {\n%s}\n", md.FullName(), DefName(md.FullName()), body.String())
		}
	}
	for r := range b.refs {
		d.refs = append(d.refs, r)
	}
	sort.Slice(d.refs, func(i, j int) bool { return d.refs[i] < d.refs[j] })
	for imp := range b.imports {
		d.imports = append(d.imports, imp)
	}
	sort.Strings(d.imports)
	return d
}

// field writes the declarations of one field, once per spelling.
func (b *builder) field(w *strings.Builder, fd protoreflect.FieldDescriptor) {
	var rules *validate.FieldRules
	if !b.disabled {
		if r, ok := proto.GetExtension(fd.Options(), validate.E_Rules).(*validate.FieldRules); ok && r != nil {
			rules = r
		}
	}
	expr, required := b.fieldExpr(fd, rules)
	marker := "?"
	names := spellings(fd)
	inOneof := fd.ContainingOneof() != nil && !fd.ContainingOneof().IsSynthetic()
	switch {
	case required && inOneof:
	case required && len(names) == 1:
		marker = "!"
	case required:
		b.requiredPairs = append(b.requiredPairs, names)
	}
	for _, n := range names {
		fmt.Fprintf(w, "\t%s%s: %s\n", label(n), marker, expr)
	}
}

// spellings are the JSON names Envoy's loader accepts for a field: the proto
// name and, when different, the lowerCamel JSON name.
func spellings(fd protoreflect.FieldDescriptor) []string {
	names := []string{string(fd.Name())}
	if fd.JSONName() != string(fd.Name()) {
		names = append(names, fd.JSONName())
	}
	return names
}

// oneofs writes the "at most one"/"exactly one" validators of the message,
// joined by " &": its oneofs, and the required fields that have two
// spellings.
func (b *builder) oneofs(w *strings.Builder) {
	var groups []string
	oneofs := b.md.Oneofs()
	for i := range oneofs.Len() {
		od := oneofs.Get(i)
		if od.IsSynthetic() {
			continue
		}
		var alts []string
		for j := range od.Fields().Len() {
			for _, n := range spellings(od.Fields().Get(j)) {
				alts = append(alts, fmt.Sprintf("{%s!: _}", label(n)))
			}
		}
		count := "<=1"
		if !b.disabled && proto.GetExtension(od.Options(), validate.E_Required).(bool) {
			count = "1"
		}
		groups = append(groups, fmt.Sprintf("matchN(%s, [%s])", count, strings.Join(alts, ", ")))
	}
	for _, names := range b.requiredPairs {
		groups = append(groups, fmt.Sprintf("matchN(1, [{%s!: _}, {%s!: _}])", label(names[0]), label(names[1])))
	}
	w.WriteString(strings.Join(groups, " &\n\t"))
}

// label quotes a field name when CUE would read it as something else.
func label(name string) string {
	if name == "" || strings.HasPrefix(name, "_") || strings.HasPrefix(name, "#") || cueKeywords[name] {
		return fmt.Sprintf("%q", name)
	}
	for _, r := range name {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return fmt.Sprintf("%q", name)
		}
	}
	return name
}

var cueKeywords = map[string]bool{
	"package": true, "import": true, "for": true, "in": true, "if": true, "let": true,
	"true": true, "false": true, "null": true, "div": true, "mod": true, "quo": true,
	"rem": true, "func": true, "_": true, "__": true,
}

func (b *builder) note(fd protoreflect.FieldDescriptor, rule string) {
	b.untranslated = append(b.untranslated, fmt.Sprintf("%s.%s: %s", b.md.FullName(), fd.Name(), rule))
}
