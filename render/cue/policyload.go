package cue

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"

	"github.com/legate-dev/legate/render"
)

// Loading policies: reading policy/ of a tree, compiling each file with
// the helpers its sibling files declare, and pruning what cannot apply.

// loadPolicies compiles every .cue file under dir in fsys. Each file is a
// policy of its own, so each may select its own nodes; helpers (#defs and
// _hidden fields) are shared by the files of one package in one directory,
// as CUE users expect of a package.
func (s *Stage) loadPolicies(fsys fs.FS, dir string) []render.Diagnostic {
	var diags []render.Diagnostic
	files := map[string][]byte{}
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".cue") {
			return nil
		}
		src, rerr := fs.ReadFile(fsys, p)
		if rerr != nil {
			diags = append(diags, render.Diagnostic{
				Pos: render.Position{File: p}, Rule: RulePolicy,
				Message: fmt.Sprintf("read policy: %v", rerr),
			})
			return nil
		}
		files[p] = src
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		diags = append(diags, render.Diagnostic{
			Pos: render.Position{File: dir}, Rule: RulePolicy,
			Message: fmt.Sprintf("read policies: %v", err),
		})
	}
	return append(diags, s.compilePolicies(files)...)
}

// compilePolicies compiles policy files given as path → source, in path
// order, each with the helpers of its siblings.
func (s *Stage) compilePolicies(files map[string][]byte) []render.Diagnostic {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var diags []render.Diagnostic
	for _, f := range names {
		var siblings []*ast.File
		for _, other := range names {
			if other == f || path.Dir(other) != path.Dir(f) {
				continue
			}
			if syn, err := parser.ParseFile(other, files[other]); err == nil {
				siblings = append(siblings, syn) // its own compile reports errors
			}
		}
		p, ds := s.compilePolicyWith(f, files[f], siblings)
		diags = append(diags, ds...)
		if p != nil {
			s.policies = append(s.policies, p)
		}
	}
	return diags
}

func (s *Stage) compilePolicy(file string, src []byte) (*policy, []render.Diagnostic) {
	return s.compilePolicyWith(file, src, nil)
}

// compilePolicyWith compiles one policy file with the helpers that the
// sibling files of its package declare.
func (s *Stage) compilePolicyWith(file string, src []byte, siblings []*ast.File) (*policy, []render.Diagnostic) {
	syntax, err := parser.ParseFile(file, src)
	if err != nil {
		return nil, cueDiagnostics(err, RulePolicy, "policy does not parse")
	}
	addSiblingHelpers(syntax, siblings)
	snakeCaseLabels(syntax)
	v := s.ctx.BuildFile(syntax)
	if err := v.Err(); err != nil {
		return nil, cueDiagnostics(err, RulePolicy, "policy does not compile")
	}
	p := &policy{file: file, lines: strings.Split(string(src), "\n"), rules: map[string]*rule{}}
	var diags []render.Diagnostic
	prune := prunable(syntax)
	it, err := v.Fields(cue.Optional(true))
	if err != nil {
		return nil, cueDiagnostics(err, RulePolicy, "policy does not evaluate")
	}
	for it.Next() {
		key := it.Selector().Unquoted()
		fv := it.Value()
		switch {
		case key == "nodes":
			if err := fv.Decode(&p.nodes); err != nil {
				diags = append(diags, posDiag(fv.Pos(), RulePolicy, "nodes: want a list of node IDs or path.Match patterns"))
			}
		case policyKeys[key] != "":
			r := &rule{key: key, value: fv}
			if prune {
				r.keep = buildMask(fv)
			}
			p.rules[policyKeys[key]] = r
		default:
			keys := make([]string, 0, len(policyKeys))
			for k := range policyKeys {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			diags = append(diags, posDiag(fv.Pos(), RulePolicy, fmt.Sprintf(
				"unknown policy field %q: want nodes or one of %s (use #name or _name for helpers)", key, strings.Join(keys, ", "))))
		}
	}
	return p, diags
}

// prunable reports whether a policy only names fields and constraints, so
// a resource can be cut down to the fields it mentions before unifying.
// Comprehensions and references to other fields of the resource need the
// whole value.
func prunable(f *ast.File) bool {
	ok := true
	imports := map[string]bool{}
	for spec := range f.ImportSpecs() {
		p := strings.Trim(spec.Path.Value, `"`)
		imports[path.Base(p)] = true
		if spec.Name != nil {
			imports[spec.Name.Name] = true
		}
	}
	ast.Walk(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.Package, *ast.ImportDecl:
			return false
		case *ast.Comprehension, *ast.LetClause:
			ok = false
		case *ast.SelectorExpr:
			// pkg.Func: only the package name is an identifier to check.
			if id, isID := x.X.(*ast.Ident); isID && imports[id.Name] {
				return false
			}
		case *ast.Field:
			// Labels are not references.
			ast.Walk(x.Value, func(n ast.Node) bool {
				if !ok {
					return false
				}
				return visitRef(n, imports, &ok)
			}, nil)
			return false
		case *ast.Ident:
			visitRef(x, imports, &ok)
		}
		return ok
	}, nil)
	return ok
}

func visitRef(n ast.Node, imports map[string]bool, ok *bool) bool {
	switch x := n.(type) {
	case *ast.Comprehension, *ast.LetClause:
		*ok = false
	case *ast.SelectorExpr:
		if id, isID := x.X.(*ast.Ident); isID && imports[id.Name] {
			return false
		}
	case *ast.Field:
		ast.Walk(x.Value, func(n ast.Node) bool { return visitRef(n, imports, ok) }, nil)
		return false
	case *ast.Ident:
		name := x.Name
		if !strings.HasPrefix(name, "#") && !strings.HasPrefix(name, "_") && !predeclared[name] && !imports[name] {
			*ok = false
		}
	}
	return *ok
}

var predeclared = map[string]bool{
	"string": true, "number": true, "int": true, "float": true, "bool": true, "bytes": true,
	"null": true, "true": true, "false": true, "_": true, "len": true, "close": true, "and": true,
	"or": true, "div": true, "mod": true, "quo": true, "rem": true, "matchN": true, "matchIf": true,
	"int8": true, "int16": true, "int32": true, "int64": true, "int128": true, "uint": true,
	"uint8": true, "uint16": true, "uint32": true, "uint64": true, "uint128": true,
	"float32": true, "float64": true, "rune": true,
}

// addSiblingHelpers adds to f the definitions (#name) and hidden fields
// (_name) that sibling files of the same package declare at top level, with
// the imports those helpers use, so a helper declared in one file of a
// policy package can be used in the others. The helpers keep their own
// positions, so errors in them point at the file that declares them.
func addSiblingHelpers(f *ast.File, siblings []*ast.File) {
	imported := map[string]bool{}
	for spec := range f.ImportSpecs() {
		imported[importName(spec)] = true
	}
	var helpers []ast.Decl
	var specs []*ast.ImportSpec
	for _, sib := range siblings {
		if sib.PackageName() != f.PackageName() {
			continue
		}
		sibImports := map[string]*ast.ImportSpec{}
		for spec := range sib.ImportSpecs() {
			sibImports[importName(spec)] = spec
		}
		for _, d := range sib.Decls {
			field, ok := d.(*ast.Field)
			if !ok {
				continue
			}
			name, _, _ := ast.LabelName(field.Label)
			if !strings.HasPrefix(name, "#") && !strings.HasPrefix(name, "_") {
				continue
			}
			helpers = append(helpers, field)
			ast.Walk(field.Value, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok {
					if spec := sibImports[id.Name]; spec != nil && !imported[id.Name] {
						imported[id.Name] = true
						specs = append(specs, spec)
					}
				}
				return true
			}, nil)
		}
	}
	if len(helpers) == 0 {
		return
	}
	at := 0 // after the package clause and imports
	for i, d := range f.Decls {
		switch d.(type) {
		case *ast.Package, *ast.ImportDecl, *ast.Attribute:
			at = i + 1
		}
	}
	var extra []ast.Decl
	if len(specs) > 0 {
		extra = append(extra, &ast.ImportDecl{Specs: specs})
	}
	decls := slices.Concat(f.Decls[:at], extra, f.Decls[at:], helpers)
	f.Decls = decls
}

// importName is the name an import is referred to by in its file.
func importName(spec *ast.ImportSpec) string {
	if spec.Name != nil {
		return spec.Name.Name
	}
	p := strings.Trim(spec.Path.Value, `"`)
	if i := strings.LastIndex(p, ":"); i >= 0 {
		return p[i+1:]
	}
	return path.Base(p)
}
