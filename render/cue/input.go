package cue

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/build"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/load"
	"cuelang.org/go/cue/token"
	"cuelang.org/go/mod/modconfig"
	"cuelang.org/go/mod/modfile"
	"cuelang.org/go/mod/module"

	"github.com/legate-dev/legate/render"
)

// RuleCUE names diagnostics of CUE packages that do not load, do not
// evaluate or are not concrete.
const RuleCUE = "cue"

// maxCUEBytes bounds the CUE source read from one tree.
const maxCUEBytes = render.DefaultMaxTotalSize

// modDir and envoyDir are where the loader finds the module file and the
// virtual package legate.dev/envoy.
const (
	modDir      = "cue.mod"
	envoyImport = "legate.dev/envoy"
	envoyDir    = modDir + "/gen/" + envoyImport
	// defaultModule is the module of a tree without cue.mod/module.cue.
	defaultModule = "config.legate.dev@v0"
)

// packages loads the CUE packages of fsys (every directory outside
// policy/, cue.mod/ and hidden directories that holds .cue files) and
// returns the documents their concrete values describe.
func (s *Stage) packages(fsys fs.FS) ([]render.Document, []render.Diagnostic) {
	files, dirs, diags := cueFiles(fsys)
	if len(dirs) == 0 {
		return nil, diags
	}
	overlay := map[string]load.Source{}
	for name, data := range files {
		overlay[virtualRoot+name] = load.FromBytes(data)
	}
	if _, ok := files[modDir+"/module.cue"]; !ok {
		overlay[virtualRoot+modDir+"/module.cue"] = load.FromString(fmt.Sprintf(
			"module: %q\nlanguage: version: %q\n", defaultModule, languageVersion))
	}
	envoySrc, ds := s.envoyPackage(files)
	diags = append(diags, ds...)
	overlay[virtualRoot+envoyDir+"/envoy.cue"] = load.FromString(envoySrc)

	args := make([]string, len(dirs))
	for i, d := range dirs {
		args[i] = "./" + d
	}
	insts := load.Instances(args, &load.Config{
		Overlay:    overlay,
		Dir:        strings.TrimSuffix(virtualRoot, "/"),
		ModuleRoot: strings.TrimSuffix(virtualRoot, "/"),
		Registry:   offline{},
		Env:        []string{},
	})
	var docs []render.Document
	for i, inst := range insts {
		dir := dirs[i]
		if inst.Err != nil {
			diags = append(diags, configDiagnostics(inst.Err, dir)...)
			continue
		}
		ds, dg := s.instance(fsys, dir, inst)
		docs, diags = append(docs, ds...), append(diags, dg...)
	}
	return docs, diags
}

// virtualRoot is where the tree's CUE files appear to the loader. Nothing
// exists there on disk: the loader reads only the overlay.
const virtualRoot = "/legate.dev/config/"

// treePath turns a file name the loader reports into a path in the tree.
func treePath(name string) string {
	return strings.TrimPrefix(name, virtualRoot)
}

// inSchema reports whether a position is in cue.mod (the generated schema
// or the module file) rather than in the configuration.
func inSchema(p token.Pos) bool {
	return strings.HasPrefix(treePath(p.Filename()), modDir+"/")
}

// languageVersion is the CUE language version of the module legate makes
// for a tree without one.
const languageVersion = "v0.17.0"

// cueFiles reads the .cue files of fsys that belong to configuration
// packages (and cue.mod/module.cue), and the directories that hold them.
func cueFiles(fsys fs.FS) (map[string][]byte, []string, []render.Diagnostic) {
	files := map[string][]byte{}
	var dirs []string
	var diags []render.Diagnostic
	var total int64
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != "." && (strings.HasPrefix(name, ".") || p == PolicyDir || name == modDir) {
				if p == modDir {
					if data, err := fs.ReadFile(fsys, modDir+"/module.cue"); err == nil {
						files[modDir+"/module.cue"] = data
					}
				}
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".cue") || !d.Type().IsRegular() {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			diags = append(diags, render.Diagnostic{Pos: render.Position{File: p}, Rule: RuleCUE, Message: fmt.Sprintf("cannot read: %v", err)})
			return nil
		}
		total += int64(len(data))
		if total > maxCUEBytes {
			diags = append(diags, render.Diagnostic{
				Pos: render.Position{File: p}, Rule: render.RuleLimit,
				Message: fmt.Sprintf("CUE files exceed %d bytes in total: split the repository", maxCUEBytes),
			})
			return fs.SkipAll
		}
		files[p] = data
		if dir := path.Dir(p); len(dirs) == 0 || dirs[len(dirs)-1] != dir {
			dirs = append(dirs, dir)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		diags = append(diags, render.Diagnostic{Pos: render.Position{File: "."}, Rule: RuleCUE, Message: fmt.Sprintf("read CUE files: %v", err)})
	}
	sort.Strings(dirs)
	dirs = compactStrings(dirs)
	return files, dirs, diags
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// instance evaluates one loaded package and turns its value into
// documents.
func (s *Stage) instance(fsys fs.FS, dir string, inst *build.Instance) ([]render.Document, []render.Diagnostic) {
	v := s.ctx.BuildInstance(inst)
	if err := v.Err(); err != nil {
		return nil, configDiagnostics(err, dir)
	}
	if err := v.Validate(); err != nil {
		return nil, configDiagnostics(err, dir)
	}
	first := path.Join(dir, "package.cue")
	if len(inst.BuildFiles) > 0 {
		first = path.Join(dir, path.Base(inst.BuildFiles[0].Filename))
	}
	nodes, err := render.NodesOf(fsys, first)
	if err != nil {
		return nil, []render.Diagnostic{{Pos: render.Position{File: path.Join(dir, render.TargetFile)}, Rule: render.RuleNode, Message: err.Error()}}
	}
	docs, diags := documents(v)
	out := make([]render.Document, 0, len(docs))
	for i, d := range docs {
		if err := d.value.Validate(cue.Concrete(true), cue.Final()); err != nil {
			diags = append(diags, configDiagnostics(err, dir)...)
			continue
		}
		data, lines := exportJSON(d.value)
		doc := render.Document{
			Path:      fmt.Sprintf("%s#%d", first, i),
			Data:      data,
			Nodes:     nodes,
			Positions: lines.mapper(dir),
		}
		out = append(out, doc)
	}
	return out, diags
}

// document is one value of a package that is an Envoy configuration
// document.
type document struct {
	value cue.Value
}

// documents finds the configuration documents in a package value: the
// value itself when it is one, else every regular top-level field that is
// a document, a list of documents or a struct of documents.
func documents(v cue.Value) ([]document, []render.Diagnostic) {
	if isDocument(v) {
		return []document{{v}}, nil
	}
	var out []document
	var diags []render.Diagnostic
	notDoc := func(x cue.Value, sel string) {
		d := posDiag(x.Pos(), RuleCUE, fmt.Sprintf(
			"%s is not an Envoy configuration document: want a value with \"@type\", \"resources\" (filesystem xDS), \"static_resources\" (bootstrap) or apiVersion and kind (EnvoyConfig), or a list or struct of them; write helpers as definitions (#%s) or hidden fields (_%s)",
			sel, sel, sel))
		d.Pos.File = treePath(d.Pos.File)
		diags = append(diags, d)
	}
	it, err := v.Fields()
	if err != nil {
		return nil, []render.Diagnostic{posDiag(v.Pos(), RuleCUE, "the package value must be a struct")}
	}
	for it.Next() {
		sel := it.Selector().String()
		fv, _ := it.Value().Default()
		if isDocument(fv) {
			out = append(out, document{fv})
			continue
		}
		var elems []cue.Value
		var labels []string
		switch fv.IncompleteKind() {
		case cue.ListKind:
			list, _ := fv.List()
			for list.Next() {
				ev, _ := list.Value().Default()
				elems, labels = append(elems, ev), append(labels, sel+"["+list.Selector().String()+"]")
			}
		case cue.StructKind:
			fields, _ := fv.Fields()
			for fields.Next() {
				ev, _ := fields.Value().Default()
				elems, labels = append(elems, ev), append(labels, sel+"."+fields.Selector().String())
			}
		}
		n := 0
		for _, ev := range elems {
			if isDocument(ev) {
				n++
			}
		}
		if n == 0 {
			notDoc(fv, sel)
			continue
		}
		for i, ev := range elems {
			if isDocument(ev) {
				out = append(out, document{ev})
			} else {
				notDoc(ev, labels[i])
			}
		}
	}
	return out, diags
}

// isDocument reports whether v has the shape of a document the renderer
// reads.
func isDocument(v cue.Value) bool {
	if v.IncompleteKind() != cue.StructKind {
		return false
	}
	has := func(name string) bool { return v.LookupPath(cue.MakePath(cue.Str(name))).Exists() }
	return has("@type") || has("resources") || has("static_resources") || has("staticResources") ||
		(has("apiVersion") && has("kind"))
}

// configDiagnostics turns CUE errors about configuration packages into
// diagnostics at the first position in the configuration (not in the
// generated schema).
func configDiagnostics(err error, dir string) []render.Diagnostic {
	var out []render.Diagnostic
	errs := cueerrors.Errors(err)
	enums := enumConflicts(errs)
	for _, e := range errs {
		format, args := e.Msg()
		key := fieldPath(e.Path())
		if c, ok := enums[key]; ok {
			// One enum typo, not one line per allowed value.
			if c.reported || !strings.Contains(format, "empty disjunction") && !c.member(e) {
				continue
			}
			c.reported = true
			d := posDiag(c.pos, RuleCUE, key+": "+c.message())
			d.Pos.File = treePath(d.Pos.File)
			out = append(out, d)
			continue
		}
		msg := bestMessage([]string{fmt.Sprintf(format, args...)})
		if p := e.Path(); len(p) > 0 {
			msg = fieldPath(p) + ": " + msg
		}
		if strings.Contains(msg, "incomplete value") {
			msg += ": give it a concrete value or a default (*value)"
		}
		// A conflict with the schema is reported where the value is
		// written (its last position), not at the reference to the schema.
		conflict := false
		if strings.HasPrefix(format, "conflicting values") {
			for _, p := range cueerrors.Positions(e) {
				conflict = conflict || inSchema(p)
			}
		}
		pos := token.NoPos
		for _, p := range cueerrors.Positions(e) {
			if p.IsValid() && !inSchema(p) {
				pos = p
				if !conflict {
					break
				}
			}
		}
		d := posDiag(pos, RuleCUE, msg)
		d.Pos.File = treePath(d.Pos.File)
		if !pos.IsValid() {
			d.Pos = render.Position{File: dir}
		}
		out = append(out, d)
	}
	return out
}

// enumConflict gathers the errors of one value that matches none of the
// names of an enum field: CUE reports one conflict per allowed value.
type enumConflict struct {
	value    string
	allowed  []string
	pos      token.Pos
	errs     map[cueerrors.Error]bool
	reported bool
}

func (c *enumConflict) member(e cueerrors.Error) bool { return c.errs[e] }

// message reads like the renderer's own enum errors.
func (c *enumConflict) message() string {
	msg := c.value + " is not one of " + strings.Join(c.allowed, ", ")
	best, bestDist := "", -1
	for _, a := range c.allowed {
		if d := render.EditDistance(strings.ToUpper(strings.Trim(c.value, `"`)), a); bestDist < 0 || d < bestDist {
			best, bestDist = a, d
		}
	}
	if bestDist >= 0 && bestDist <= max(2, len(best)/3) {
		msg += "; did you mean " + best + "?"
	}
	return msg
}

// enumConflicts finds, by field path, the conflicts of a string with every
// name of an enum (the generated schema spells an enum as its names and
// numbers), and where the string is written: the last position outside
// the schema, the value's own, rather than the reference to the schema.
func enumConflicts(errs []cueerrors.Error) map[string]*enumConflict {
	byPath := map[string][]cueerrors.Error{}
	for _, e := range errs {
		if format, _ := e.Msg(); format == "conflicting values %s and %s" {
			key := fieldPath(e.Path())
			byPath[key] = append(byPath[key], e)
		}
	}
	out := map[string]*enumConflict{}
	for key, es := range byPath {
		if len(es) < 2 {
			continue
		}
		count := map[string]int{}
		for _, e := range es {
			_, args := e.Msg()
			for _, a := range args {
				count[fmt.Sprint(a)]++
			}
		}
		value := ""
		for v, n := range count {
			if n == len(es) && strings.HasPrefix(v, `"`) {
				value = v
			}
		}
		if value == "" {
			continue
		}
		c := &enumConflict{value: value, errs: map[cueerrors.Error]bool{}}
		for _, e := range es {
			c.errs[e] = true
			_, args := e.Msg()
			for _, a := range args {
				if v := fmt.Sprint(a); v != value && strings.HasPrefix(v, `"`) {
					c.allowed = append(c.allowed, strings.Trim(v, `"`))
				}
			}
			for _, p := range cueerrors.Positions(e) {
				if p.IsValid() && !inSchema(p) {
					c.pos = p
				}
			}
		}
		if len(c.allowed) < 2 {
			continue
		}
		out[key] = c
	}
	return out
}

// offline is the module registry of a render: there is none, so a
// configuration cannot make legate fetch anything.
type offline struct{}

var errOffline = errors.New("CUE module dependencies are not fetched: legate renders offline; vendor the package into the repository or import legate.dev/envoy")

func (offline) ModFile(context.Context, module.Version) (*modfile.File, error) {
	return nil, errOffline
}

func (offline) Fetch(context.Context, module.Version) (module.SourceLoc, error) {
	return module.SourceLoc{}, errOffline
}

func (offline) ModuleVersions(context.Context, string) ([]string, error) {
	return nil, errOffline
}

var _ modconfig.Registry = offline{}
