package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	yaml "go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Render reads every YAML and JSON file of fsys, decodes and validates the
// Envoy resources they hold and renders them per node. Files name their
// node by the documented conventions (see Load). The result holds either
// the node configurations or every diagnostic, never both.
func Render(fsys fs.FS, opts Options) *Result {
	opts = opts.withDefaults()
	docs, diags := Load(fsys, opts)
	for _, g := range opts.Generators {
		// A generator cannot be stopped from inside: the render stops
		// between them.
		if opts.Context != nil && opts.Context.Err() != nil {
			break
		}
		more, ds := g.Generate(fsys)
		docs = append(docs, more...)
		diags = append(diags, ds...)
	}
	return renderDocuments(docs, opts, diags)
}

// RenderDocuments renders in-memory documents, such as the EnvoyConfig
// objects the Kubernetes home watches. Generators are not run.
func RenderDocuments(docs []Document, opts Options) *Result {
	return renderDocuments(docs, opts.withDefaults(), nil)
}

// renderer carries one render's state. It is not safe for concurrent use.
type renderer struct {
	opts    Options
	diags   []Diagnostic
	items   []*item
	skipped int
	src     []byte // the file being classified
	// docIndex is the 0-based index of the document being classified in
	// its file, for messages about a whole document.
	docIndex int
	jw       jsonWriter
	// generatedEndpoints are node+"\x00"+cluster keys of load assignments
	// the home builds (MARIN3R generateFromEndpointSlices), with where
	// each is asked for; generated are those the home acts on.
	generatedEndpoints map[string]Position
	generated          []generated
	refs               []ref
	index              index
	failed             index // resources that did not decode
	envoyConfigs       map[string]envoyConfigRef
	// fallback maps the private scope of a proxy bootstrap's static
	// resources to the nodes whose served resources they may refer to.
	fallback map[string][]string
	// unparsed are the files with a syntax error.
	unparsed []unparsedFile
	// settings are the Settings of each document, by path.
	settings map[string]Settings
	// file is the document being read, for the diagnostic of a panic.
	file string
	// embeds are the string values of envoyResources already parsed.
	embeds map[*yaml.Node]parsedValue
	// parent is the caller's context (Options.Context), whose end
	// stops the render as its own Timeout does (see watch).
	parent context.Context
	// ctx ends at the render's Timeout or with parent.
	ctx context.Context
}

func (r *renderer) add(d Diagnostic) { r.diags = append(r.diags, d) }

func (r *renderer) addf(pos Position, rule, format string, args ...any) {
	r.add(Diagnostic{Pos: pos, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// warnf adds a warning: something Envoy accepts that is likely a mistake.
func (r *renderer) warnf(pos Position, rule, format string, args ...any) {
	r.add(Diagnostic{Pos: pos, Rule: rule, Message: fmt.Sprintf(format, args...), Severity: SeverityWarning})
}

func renderDocuments(docs []Document, opts Options, diags []Diagnostic) (res *Result) {
	r := &renderer{opts: opts, diags: diags, generatedEndpoints: map[string]Position{}, envoyConfigs: map[string]envoyConfigRef{}, settings: map[string]Settings{}, fallback: map[string][]string{}}
	r.jw.budget = newBudget(opts.MaxExpansion)
	defer r.watch(opts.Context)()
	// Rendering fetched input must never take the process down: a panic
	// left in the renderer rejects this render, naming the file it was
	// working on, and the server goes on serving what it served. A render
	// out of budget, or stopped, ends the same way, with one diagnostic
	// and nothing of what it decoded.
	defer func() {
		if v := recover(); v != nil {
			var d Diagnostic
			switch v := v.(type) {
			case budgetError:
				d = v.diag
			case error:
				if errors.Is(v, errStopped) {
					d = limitAt(r.file, r.stopMessage()).diag
				} else {
					d = internalDiagnostic(r.file, v)
				}
			default:
				d = internalDiagnostic(r.file, v)
			}
			ds := []Diagnostic{d}
			mapDiagnostics(positionMaps(docs), ds)
			res = &Result{Diagnostics: ds}
		}
	}()
	for _, d := range docs {
		r.file = d.Path
		r.checkDeadline()
		r.document(d)
	}
	r.file = ""
	r.decodeAll()
	r.checkDeadline()
	r.names()
	decoded := r.validate()
	r.references()
	r.checkGenerated()
	for _, c := range opts.Checks {
		r.checkDeadline()
		r.diags = append(r.diags, c.Check(decoded)...)
	}
	r.failedChecks()
	r.checkDeadline()
	maps := positionMaps(docs)
	mapDiagnostics(maps, r.diags)
	res = &Result{}
	for _, d := range r.diags {
		if strings.HasPrefix(d.Node, proxyScopePrefix) {
			d.Node = "" // the message names the bootstrap
		}
		if d.IsWarning() {
			res.Warnings = append(res.Warnings, d)
		} else {
			res.Diagnostics = append(res.Diagnostics, d)
		}
	}
	res.Warnings = SortDiagnostics(res.Warnings)
	if len(res.Diagnostics) > 0 {
		res.Diagnostics = SortDiagnostics(res.Diagnostics)
		return res
	}
	res.Diagnostics = nil
	res.Nodes = r.output()
	r.checkDeadline()
	mapSources(maps, res.Nodes)
	return res
}

// document parses one input document and classifies what it holds.
func (r *renderer) document(d Document) {
	nodes := d.Nodes
	if nodes == nil {
		nodes = pathNodes(d.Path)
	}
	if nodes == nil && r.opts.DefaultNode != "" {
		nodes = []string{r.opts.DefaultNode}
	}
	r.settings[d.Path] = d.Settings
	roots, err := parseDocuments(d.Data)
	r.jw.budget.allowInput(len(d.Data), roots...)
	if err != nil {
		r.add(syntaxDiagnostic(d.Path, d.Data, err))
		r.unparsed = append(r.unparsed, unparsedFile{file: d.Path, nodes: nodes})
	}
	r.src = d.Data
	for i, root := range roots {
		r.docIndex = i
		r.classify(d.Path, root, nodes)
	}
	r.src = nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func syntaxDiagnostic(file string, data []byte, err error) Diagnostic {
	d := Diagnostic{Pos: Position{File: file}, Rule: RuleSyntax, Message: err.Error()}
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		d.Message = strings.Join(te.Errors, "; ")
	}
	line := 0
	if m := yamlLine.FindStringSubmatch(d.Message); m != nil {
		line, _ = strconv.Atoi(m[1])
		d.Message = m[2]
	}
	d.Message = strings.TrimPrefix(d.Message, "yaml: ")
	if !strings.HasPrefix(d.Message, "unknown anchor") {
		d.Pos.Line, d.Pos.Column = syntaxPosition(data, line, d.Message)
	}
	if strings.Contains(d.Message, "tab character") {
		// go.yaml.in/yaml/v3 reports this one at the line before the tab.
		for l := d.Pos.Line; l <= d.Pos.Line+1 && l > 0; l++ {
			t := lineText(data, l)
			if i := bytes.IndexByte(t, '\t'); i >= 0 && tabAt(t, runeColumn(t, i)) {
				d.Pos.Line, d.Pos.Column = l, runeColumn(t, i)
				break
			}
		}
	}
	if t := lineText(data, d.Pos.Line); d.Pos.Line > 0 && d.Pos.Column > 0 && tabAt(t, d.Pos.Column) {
		// The parser's own words ("found character that cannot start
		// any token", "found a tab character that violates
		// indentation") do not say what to change.
		d.Message = fmt.Sprintf("YAML forbids tabs for indentation: line %d column %d holds a tab; indent with spaces (%s)", d.Pos.Line, d.Pos.Column, d.Message)
	}
	return d
}

// unparsedFile is a file with a syntax error: what its lost documents
// defined is unknown, so references into its nodes are not checked.
type unparsedFile struct {
	file  string
	nodes []string // nil: every node
}

// unparsedFor returns the files that failed to parse and may have held
// resources of node.
func (r *renderer) unparsedFor(node string) []string {
	var out []string
	for _, u := range r.unparsed {
		if u.nodes == nil || slices.Contains(u.nodes, node) {
			out = append(out, u.file)
		}
	}
	return out
}

var unresolved = regexp.MustCompile(`unable to resolve "([^"]+)"`)

var protojsonPos = regexp.MustCompile(`^proto:\s*(?:syntax error )?\(line (\d+):(\d+)\): (.*)$`)

// decodeAll strictly decodes every item's resource message, in parallel.
func (r *renderer) decodeAll() {
	diags := make([]*Diagnostic, len(r.items))
	b := r.jw.budget
	parallel(len(r.items), func(i int) {
		it := r.items[i]
		if it.ext != nil || r.expired() || b.tripped.Load() != nil {
			return
		}
		jw := writers.Get().(*jsonWriter)
		jw.budget = b
		defer func() {
			if v := recover(); v != nil {
				d := internalDiagnostic(it.file, v)
				diags[i] = &d
			}
		}()
		m := it.kind.new()
		if d := decodeWith(jw, it, m); d != nil {
			if d.Rule == RuleLimit {
				// The render stops at the first resource over its
				// budget: that one diagnostic is its verdict.
				b.tripped.CompareAndSwap(nil, d)
				return
			}
			diags[i] = d
			it.problems = append(it.problems, *d)
		} else {
			it.msg = m
		}
		if jw.pooled() {
			writers.Put(jw)
		}
	})
	r.checkDeadline()
	for _, d := range diags {
		if d != nil {
			r.add(*d)
		}
	}
}

var writers = sync.Pool{New: func() any { return &jsonWriter{} }}

// decodeWith decodes it.root into m with protojson, rejecting unknown
// fields, and returns a diagnostic at the YAML node the error points at.
func decodeWith(jw *jsonWriter, it *item, m proto.Message) *Diagnostic {
	err := jw.writeResource(it.root, it.skip...)
	if err != nil {
		var ne *nodeError
		var d Diagnostic
		switch {
		case errors.Is(err, errStopped):
			// The render's own diagnostic says why (checkDeadline).
			d = it.diag(nil, RuleLimit, err.Error())
		case errors.As(err, &ne):
			rule := ne.rule
			if rule == "" {
				rule = RuleDecode
			}
			d = it.diag(ne.node, rule, ne.msg)
		default:
			d = it.diag(nil, RuleDecode, err.Error())
		}
		return &d
	}
	err = protojson.UnmarshalOptions{Resolver: protoregistry.GlobalTypes}.Unmarshal(jw.buf, m)
	if err == nil {
		return nil
	}
	msg := strings.ReplaceAll(err.Error(), "\u00a0", " ")
	if strings.Contains(msg, "invalid value for enum") {
		// Envoy reads enum names case-insensitively: upper-case what
		// matches and decode again; explain what matches nothing.
		scan := upperEnums(it.root, m.ProtoReflect().Descriptor(), it.skip)
		if scan.fixed > 0 {
			// Written again: the first text and message are dropped.
			jw.refund()
			proto.Reset(m)
			return decodeWith(jw, it, m)
		}
		if mm := protojsonPos.FindStringSubmatch(msg); mm != nil {
			col, _ := strconv.Atoi(mm[2])
			if at := jw.nodeAt(col); at != nil && scan.bad[at] != nil {
				d := it.diag(at, RuleDecode, enumMessage(at.Value, scan.bad[at]))
				return &d
			}
		}
	}
	var at *yaml.Node
	if mm := protojsonPos.FindStringSubmatch(msg); mm != nil {
		col, _ := strconv.Atoi(mm[2])
		at = jw.nodeAt(col)
		msg = mm[3]
	}
	msg = strings.TrimPrefix(msg, "proto: ")
	if m := unresolved.FindStringSubmatch(msg); m != nil && isV2(m[1]) {
		msg = v2Message(m[1])
	}
	d := it.diag(at, RuleDecode, msg)
	if at != nil && strings.HasPrefix(msg, "unknown field") {
		d.Message += unknownFieldHint(m.ProtoReflect().Descriptor(), it.root, pathTo(it.root, at))
	}
	return &d
}

// diag builds a diagnostic about an item at node n (the item when nil).
func (it *item) diag(n *yaml.Node, rule, msg string) Diagnostic {
	d := Diagnostic{Pos: it.pos(), Rule: rule, Message: msg}
	if it.kind != nil {
		d.Type = it.kind.url
		d.Name = it.displayName()
	}
	if len(it.nodes) == 1 {
		d.Node = it.nodes[0]
	}
	if n != nil {
		d.Pos = nodePos(it.file, n)
		if segs := pathTo(it.root, n); len(segs) > 0 {
			d.Field = joinPath(segs)
		}
	}
	return d
}

// displayName is the resource's name, read from the input when the
// message is not decoded.
func (it *item) displayName() string {
	if it.ext != nil {
		return it.ext.Name
	}
	if it.name != "" {
		return it.name
	}
	if it.msg != nil {
		return it.kind.name(it.msg)
	}
	if it.autoName {
		if n := scalar(mapValue(it.root, "name")); n != "" {
			return n
		}
		sa := mapValue(mapValue(it.root, "address"), "socket_address")
		if sa == nil {
			sa = mapValue(mapValue(it.root, "address"), "socketAddress")
		}
		port := scalar(mapValue(sa, "port_value")) + scalar(mapValue(sa, "portValue"))
		return scalar(mapValue(sa, "address")) + ":" + port
	}
	if it.kind != nil && it.kind.url == EndpointType {
		return scalar(mapValue(it.root, "cluster_name")) + scalar(mapValue(it.root, "clusterName"))
	}
	return scalar(mapValue(it.root, "name"))
}

// internalDiagnostic turns a panic of the renderer into the rejection of
// what it was rendering.
func internalDiagnostic(file string, v any) Diagnostic {
	if file == "" {
		file = "(configuration)"
	}
	return Diagnostic{Pos: Position{File: file}, Rule: RuleInternal, Message: fmt.Sprintf(
		"internal error while rendering %s: %v; this is a legate bug, please report it with this file", file, v)}
}

// parallel calls fn(i) for i in [0, n) on up to GOMAXPROCS goroutines.
func parallel(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	// A panic in a worker is raised again in the caller's goroutine, where
	// the render's recover boundary turns it into a diagnostic.
	var panicked atomic.Pointer[any]
	defer func() {
		if v := panicked.Load(); v != nil {
			panic(*v)
		}
	}()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if v := recover(); v != nil {
					panicked.CompareAndSwap(nil, &v)
				}
			}()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}
