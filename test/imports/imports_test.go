package imports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/legate-dev/legate"

// homes are the folders that assemble legate for one environment. A rename
// (the Kubernetes home may become kube/) must be made here too; the test
// fails while a listed home does not exist so that the rule cannot go
// silently dead.
var homes = []string{"standalone", "controller"}

// wiring may import the homes: cmd/ parses flags and starts one, test/
// drives both end to end. Nothing in them is a shared package.
var wiring = []string{"cmd", "test"}

// exampleTests lists where test files (only) may start a home: an example's
// test runs the example against a real home, as an end-to-end test does.
var exampleTests = []string{"examples"}

// stageRule forbids the packages under one stage from depending, directly
// or through any other package, on the packages under the stages listed.
type stageRule struct {
	stage  string
	forbid []string
	why    string
}

var stageRules = []stageRule{
	{
		stage:  "render",
		forbid: []string{"sources", "pipeline", "revisions", "xds", "sds", "forge"},
		why:    "render is pure and imports none of the other stages",
	},
	{
		stage:  "sources",
		forbid: []string{"render", "pipeline", "revisions", "xds", "sds", "forge"},
		why:    "sources imports no later stage",
	},
}

// leaves import no package of the module, so that every stage and both
// homes may import them without bending the rules above.
var leaves = []string{"textbound"}

// pkg is the part of `go list -json` the rules read. Paths are relative to
// the module ("sds/kubesecrets"); packages outside the module are dropped.
type pkg struct {
	Path string
	// Deps is every package the non-test code needs, transitively.
	Deps []string
	// TestImports are the direct imports of the package's test files,
	// internal and external; their own dependencies are checked as packages
	// of their own.
	TestImports []string
}

// within reports whether path is dir or a package under it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

func withinAny(path string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return within(path, d) })
}

func homeOf(path string) string {
	for _, h := range homes {
		if within(path, h) {
			return h
		}
	}
	return ""
}

// violations returns one message per broken rule, naming the importing
// package, the imported one and the rule. It is pure so that the rules
// themselves are tested on small made-up graphs.
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		for _, dep := range p.Deps {
			if msg := homeRule(p.Path, dep, "imports"); msg != "" {
				out = append(out, msg)
			}
			for _, r := range stageRules {
				if within(p.Path, r.stage) && withinAny(dep, r.forbid) {
					out = append(out, fmt.Sprintf("%s imports %s (directly or through another package): %s", p.Path, dep, r.why))
				}
			}
			if withinAny(p.Path, leaves) && !within(dep, p.Path) {
				out = append(out, fmt.Sprintf("%s imports %s (directly or through another package): %s is a leaf that imports nothing of legate", p.Path, dep, p.Path))
			}
		}
		if withinAny(p.Path, exampleTests) {
			continue
		}
		for _, imp := range p.TestImports {
			if msg := homeRule(p.Path, imp, "test files import"); msg != "" {
				out = append(out, msg)
			}
		}
	}
	return out
}

func homeRule(importer, imported, verb string) string {
	to := homeOf(imported)
	if to == "" || withinAny(importer, wiring) {
		return ""
	}
	switch from := homeOf(importer); {
	case from == to:
		return ""
	case from != "":
		return fmt.Sprintf("%s %s %s %s: the homes never import each other", importer, verb, imported, depth(verb))
	default:
		return fmt.Sprintf("%s %s %s %s: no package except cmd/ and test/ imports a home", importer, verb, imported, depth(verb))
	}
}

// depth says how far the import reaches: Deps are transitive, test imports
// are direct.
func depth(verb string) string {
	if verb == "imports" {
		return "(directly or through another package)"
	}
	return "(directly)"
}

func TestViolations(t *testing.T) {
	for _, tc := range []struct {
		name string
		pkgs []pkg
		want []string
	}{
		{
			name: "a shared package reaching a home through another package",
			pkgs: []pkg{{Path: "core", Deps: []string{"revisions", "standalone/webui"}}},
			want: []string{"core imports standalone/webui (directly or through another package): no package except cmd/ and test/ imports a home"},
		},
		{
			name: "the homes importing each other",
			pkgs: []pkg{{Path: "controller/replicas", Deps: []string{"standalone"}}},
			want: []string{"controller/replicas imports standalone (directly or through another package): the homes never import each other"},
		},
		{
			name: "a home importing itself, cmd and test importing both",
			pkgs: []pkg{
				{Path: "standalone", Deps: []string{"standalone/webui"}},
				{Path: "cmd/legate", Deps: []string{"standalone", "controller"}},
				{Path: "test/e2e", TestImports: []string{"standalone", "controller"}},
			},
		},
		{
			name: "a shared package's test starting a home",
			pkgs: []pkg{{Path: "sds", TestImports: []string{"controller"}}},
			want: []string{"sds test files import controller (directly): no package except cmd/ and test/ imports a home"},
		},
		{
			name: "an example's test starting a home, not its program",
			pkgs: []pkg{
				{Path: "examples/grpc/greeter", TestImports: []string{"standalone"}},
				{Path: "examples/grpc/other", Deps: []string{"standalone"}},
			},
			want: []string{"examples/grpc/other imports standalone (directly or through another package): no package except cmd/ and test/ imports a home"},
		},
		{
			name: "render reaching a stage",
			pkgs: []pkg{{Path: "render/cue", Deps: []string{"render", "sources"}}},
			want: []string{"render/cue imports sources (directly or through another package): render is pure and imports none of the other stages"},
		},
		{
			name: "sources reaching a later stage",
			pkgs: []pkg{{Path: "sources/kube", Deps: []string{"sources", "netguard", "revisions/kubestore"}}},
			want: []string{"sources/kube imports revisions/kubestore (directly or through another package): sources imports no later stage"},
		},
		{
			name: "a leaf importing the module",
			pkgs: []pkg{
				{Path: "textbound", Deps: []string{"render"}},
				{Path: "render", Deps: []string{"textbound"}},
			},
			want: []string{"textbound imports render (directly or through another package): textbound is a leaf that imports nothing of legate"},
		},
		{
			name: "a later stage importing an earlier one, and a prefix that is not a folder",
			pkgs: []pkg{
				{Path: "pipeline", Deps: []string{"render", "sources", "revisions"}},
				{Path: "renderer", Deps: []string{"revisions"}},
				{Path: "render", Deps: []string{"sourcesx"}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, violations(tc.pkgs))
		})
	}
}

// TestModuleImports checks the rules on the module as it is.
func TestModuleImports(t *testing.T) {
	pkgs := listModule(t)

	var paths []string
	for _, p := range pkgs {
		paths = append(paths, p.Path)
	}
	named := append(slices.Clone(homes), wiring...)
	named = append(named, leaves...)
	for _, r := range stageRules {
		named = append(named, r.stage)
		named = append(named, r.forbid...)
	}
	for _, n := range named {
		assert.True(t, slices.ContainsFunc(paths, func(p string) bool { return within(p, n) }),
			"the import rules name %s/, which holds no package: update the rules after a move", n)
	}

	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// listModule lists the module's packages with `go list`, which resolves
// build constraints the way the build does and reports transitive deps.
func listModule(t *testing.T) []pkg {
	t.Helper()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the import rules read the package graph with the go command")

	root, err := exec.CommandContext(t.Context(), goTool, "list", "-m", "-f", "{{.Dir}}").Output()
	require.NoError(t, err, "go list -m")
	touchSources(t, strings.TrimSpace(string(root)))

	cmd := exec.CommandContext(t.Context(), goTool, "list", "-json=ImportPath,Deps,TestImports,XTestImports", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())

	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var raw struct {
			ImportPath                string
			Deps                      []string
			TestImports, XTestImports []string
		}
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "decoding go list's output")
		pkgs = append(pkgs, pkg{
			Path:        rel(raw.ImportPath),
			Deps:        internal(raw.Deps),
			TestImports: internal(append(raw.TestImports, raw.XTestImports...)),
		})
	}
	require.NotEmpty(t, pkgs, "go list found no package of %s", module)
	return pkgs
}

// touchSources reads the module's folders and stats its Go files and
// go.mod. The go command caches a passing test's result keyed on the files
// the test itself touched; what `go list` reads in a child process is not
// among them, so without this an import added anywhere would be hidden
// behind "(cached)".
func touchSources(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// bin/ holds the built tools (and is a symlink); testdata
			// and dot folders are ignored by the go command too.
			if path != root && (d.Name() == "bin" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") || d.Name() == "go.mod" {
			_, err = os.Stat(path)
		}
		return err
	})
	require.NoError(t, err, "reading the module's sources")
}

func rel(path string) string {
	if path == module {
		return "."
	}
	return strings.TrimPrefix(path, module+"/")
}

// internal keeps the module's own packages, relative to the module.
func internal(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == module || strings.HasPrefix(p, module+"/") {
			out = append(out, rel(p))
		}
	}
	return out
}
