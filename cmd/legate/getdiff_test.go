package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goGitRepo is a repository made and committed to with go-git alone.
type goGitRepo struct {
	t    *testing.T
	dir  string
	repo *gogit.Repository
}

func newGoGitRepo(t *testing.T) *goGitRepo {
	t.Helper()
	dir := t.TempDir()
	repo, err := gogit.PlainInit(dir, false)
	require.NoError(t, err)
	return &goGitRepo{t: t, dir: dir, repo: repo}
}

// commit writes files (relative paths) and commits every change.
func (r *goGitRepo) commit(msg string, files map[string]string) string {
	r.t.Helper()
	for name, content := range files {
		p := filepath.Join(r.dir, filepath.FromSlash(name))
		require.NoError(r.t, os.MkdirAll(filepath.Dir(p), 0o750))
		require.NoError(r.t, os.WriteFile(p, []byte(content), 0o600))
	}
	wt, err := r.repo.Worktree()
	require.NoError(r.t, err)
	require.NoError(r.t, wt.AddGlob("."))
	h, err := wt.Commit(msg, &gogit.CommitOptions{Author: &object.Signature{Name: "Ada", Email: "ada@example.com", When: time.Unix(1700000000, 0)}})
	require.NoError(r.t, err)
	return h.String()
}

// quickstartFiles are the files of the quickstart example's node, by name,
// with the replacements (old, new, ...) made in the file named.
func quickstartFiles(t *testing.T, node string, edits map[string][]string) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, name := range []string{"listener.yaml", "routes.yaml", "clusters.yaml", "endpoints.yaml"} {
		data, err := os.ReadFile(filepath.Join("../../examples/quickstart/nodes/edge", name))
		require.NoError(t, err)
		text := string(data)
		for e := edits[name]; len(e) >= 2; e = e[2:] {
			require.Contains(t, text, e[0])
			text = strings.Replace(text, e[0], e[1], 1)
		}
		files["envoy/nodes/"+node+"/"+name] = text
	}
	return files
}

// diffRepo has three commits under envoy/: three nodes running the
// quickstart, then two of them changed, then a route to a cluster that
// does not exist.
func diffRepo(t *testing.T) (r *goGitRepo, base, changed, broken string) {
	r = newGoGitRepo(t)
	r.commit("readme", map[string]string{"README.md": "x\n"})
	all := map[string]string{}
	for _, n := range []string{"a", "b", "c"} {
		maps.Copy(all, quickstartFiles(t, n, nil))
	}
	base = r.commit("three nodes", all)
	changed = r.commit("a and b change", maps.Collect(func(yield func(string, string) bool) {
		for k, v := range quickstartFiles(t, "a", map[string][]string{"clusters.yaml": {"connect_timeout: 1s", "connect_timeout: 2s"}}) {
			yield(k, v)
		}
		for k, v := range quickstartFiles(t, "b", map[string][]string{"endpoints.yaml": {"port_value: 8081", "port_value: 8082"}}) {
			yield(k, v)
		}
	}))
	broken = r.commit("a route to nowhere", quickstartFiles(t, "c", map[string][]string{
		"routes.yaml": {"name: edge-routes\n", "name: edge-routes\n  validate_clusters: true\n", "cluster: backend", "cluster: api-v2"},
	}))
	return r, base, changed, broken
}

func TestDiffRefsListsExactlyTheChangedNodes(t *testing.T) {
	r, base, changed, _ := diffRepo(t)
	// A change in the work tree is not part of any commit.
	require.NoError(t, os.WriteFile(filepath.Join(r.dir, "envoy/nodes/c/clusters.yaml"), []byte("dirty"), 0o600))

	out, err := runLegate(t, "diff", "--base", base, "--head", changed, filepath.Join(r.dir, "envoy"))
	assert.Equal(t, diffChanged, exitCode(err), out)
	assert.Contains(t, out, fmt.Sprintf("%s against %s: 2 node(s) changed, 0 added, 0 removed, 1 unchanged\n", changed[:12], base[:12]))
	assert.Contains(t, out, "node a: changed\n  Cluster: changed backend\n")
	assert.Contains(t, out, "node b: changed\n  ClusterLoadAssignment: changed backend\n")
	assert.NotContains(t, out, "node c")
	assert.Contains(t, out, "+connect_timeout: 2s\n")
	assert.Contains(t, out, "-          port_value: 8081\n+          port_value: 8082\n")

	out, err = runLegate(t, "diff", "--base", base, "--head", changed, "-o", "json", filepath.Join(r.dir, "envoy"))
	assert.Equal(t, diffChanged, exitCode(err))
	var rep struct {
		Nodes []struct {
			Node  string
			Types []struct {
				Type    string
				Changed []string
				Diffs   []struct{ Source string }
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Len(t, rep.Nodes, 2)
	assert.Equal(t, "a", rep.Nodes[0].Node)
	assert.Equal(t, "envoy/nodes/a/clusters.yaml:2:3", rep.Nodes[0].Types[0].Diffs[0].Source, "files named from the repository root")
	assert.Equal(t, []string{"backend"}, rep.Nodes[1].Types[0].Changed)

	out, err = runLegate(t, "diff", "--base", base, "--head", changed, "-o", "markdown", filepath.Join(r.dir, "envoy"))
	assert.Equal(t, diffChanged, exitCode(err))
	assert.Contains(t, out, "| <code>a</code> | changed | unknown | Cluster (1 changed) |\n")
}

func TestDiffRefsWithoutChangeExitsZero(t *testing.T) {
	r, base, _, _ := diffRepo(t)
	wd, err := os.Getwd()
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.Chdir(wd) })
	require.NoError(t, os.Chdir(filepath.Join(r.dir, "envoy")))
	// PATH defaults to the current directory; the readme commit changes
	// no node.
	out, err := runLegate(t, "diff", "--base", base, "--head", base)
	require.NoError(t, err, out)
	assert.Equal(t, 0, exitCode(err))
	assert.Contains(t, out, "changes no node (3 unchanged)")
}

func TestDiffRefsInvalidHeadExitsTwoWithFileAndLine(t *testing.T) {
	r, _, changed, broken := diffRepo(t)
	out, err := runLegate(t, "diff", "--base", changed, "--head", broken, filepath.Join(r.dir, "envoy"))
	assert.Equal(t, diffInvalid, exitCode(err), out)
	assert.Contains(t, out, "is invalid: 1 problem(s), nothing compared\n")
	assert.Regexp(t, `envoy/nodes/c/routes\.yaml:\d+:\d+: route "edge-routes" .*cluster "api-v2" is not defined for node "c"`, out)

	// The head is HEAD by default.
	out, err = runLegate(t, "diff", "--base", changed, filepath.Join(r.dir, "envoy"))
	assert.Equal(t, diffInvalid, exitCode(err), out)
}

func TestDiffRefsUsageErrorsExitTwo(t *testing.T) {
	r, base, _, _ := diffRepo(t)
	envoy := filepath.Join(r.dir, "envoy")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--base", "nope", envoy}, `--base: revision "nope": no such branch, tag or commit`},
		{[]string{"--base", base, "--head", "nope", envoy}, `--head: revision "nope"`},
		{[]string{"--head", base, envoy}, "--head needs --base"},
		{[]string{"--base", base, "-o", "yaml", envoy}, `unknown output format "yaml"`},
		{[]string{"--base", base, envoy, envoy}, "at most one PATH"},
		{[]string{"--base", base, t.TempDir()}, "repository at "},
	} {
		out, err := runLegate(t, append([]string{"diff"}, tc.args...)...)
		assert.Equal(t, diffInvalid, exitCode(err), "%v: %s", tc.args, out)
		assert.ErrorContains(t, err, tc.want, tc.args)
	}
	// The server mode keeps its arguments.
	_, err := runLegate(t, "diff", "edge")
	require.ErrorContains(t, err, "accepts between 2 and 3 arg(s), received 1 (or give --base REF to compare two commits)")
	_, err = runLegate(t, "diff", "edge", "a", "-o", "json")
	require.ErrorContains(t, err, "--output and --node go with --base and --head")
}
