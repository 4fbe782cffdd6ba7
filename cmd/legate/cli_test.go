package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/standalone"
	"github.com/legate-dev/legate/statuspage"
)

const clusterYAML = `"@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
name: backend-%s
type: STATIC
connect_timeout: 1s
`

// gitRepo is a local repository with one cluster file.
type gitRepo struct {
	t   *testing.T
	dir string
}

func (r gitRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=Ada", "-c", "user.email=ada@legate.invalid", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	require.NoError(r.t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

func (r gitRepo) commit(name string) string {
	r.t.Helper()
	require.NoError(r.t, os.WriteFile(filepath.Join(r.dir, "cluster.yaml"), []byte(strings.ReplaceAll(clusterYAML, "%s", name)), 0o600))
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "cluster "+name)
	return r.git("rev-parse", "HEAD")
}

// startLegate runs a standalone server following repo for node edge and
// returns its HTTP address and state directory.
func startLegate(t *testing.T, repo gitRepo) (addr, stateDir string) {
	t.Helper()
	stateDir = t.TempDir()
	srv, err := standalone.New(serveconfig.Config{
		StateDir: stateDir, DefaultNode: "edge", XDSAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		Sources: []serveconfig.SourceConfig{{Name: "cfg", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}, standalone.Options{Render: newRenderOptions()})
	require.NoError(t, err)
	runUntilCleanup(t, srv)
	return srv.HTTPAddr(), stateDir
}

// TestCLIAgainstARunningServer drives status, get, diff, reconcile,
// suspend, resume and untaint against a real legate serve.
func TestCLIAgainstARunningServer(t *testing.T) {
	repo := gitRepo{t: t, dir: t.TempDir()}
	repo.git("init", "-q", "-b", "main")
	first := repo.commit("a")
	addr, stateDir := startLegate(t, repo)
	server := "--server=" + addr // host:port, as --http-addr takes it
	run := func(args ...string) string {
		t.Helper()
		out, err := runLegate(t, append(args, server)...)
		require.NoError(t, err, "legate %v: %s", args, out)
		return out
	}

	out := run("status")
	assert.Contains(t, out, "cfg     main@sha1:"+first[:12]+"  same     edge")
	assert.Contains(t, out, "edge  Pending  ")
	assert.Contains(t, out, "none connected")
	assert.Contains(t, out, "Pending: ")

	out = run("status", "edge", "-o", "yaml")
	assert.Contains(t, out, "nodeID: edge")
	assert.Contains(t, out, "summary: serving the newest revision; no proxy of this node is connected")
	_, err := runLegate(t, "status", "-o", "foo", server)
	assert.ErrorContains(t, err, `unknown output format "foo": use one of text, wide, json, yaml`)
	_, err = runLegate(t, "status", "nope", server)
	assert.EqualError(t, err, `no node "nope"`)

	out, err = runLegate(t, "__complete", "status", server, "")
	require.NoError(t, err)
	assert.Contains(t, out, "edge\n", "node IDs complete from the server")
	out, err = runLegate(t, "__complete", "reconcile", server, "")
	require.NoError(t, err)
	assert.Contains(t, out, "cfg\n", "source names complete from the server")

	out = run("get", "edge")
	assert.Contains(t, out, "name: backend-a")
	assert.Contains(t, out, "type: Cluster")
	assert.Contains(t, out, "served: true")

	_, err = runLegate(t, "reconcile", "cfg", server, "--token-file", filepath.Join(t.TempDir(), "none"))
	assert.ErrorContains(t, err, "read the admin token")
	wrong := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(wrong, []byte("not-the-token"), 0o600))
	_, err = runLegate(t, "reconcile", "cfg", server, "--token-file", wrong)
	assert.ErrorContains(t, err, "legate serve refused the call without a valid token: a valid admin bearer token is required")

	second := repo.commit("b")
	out = run("reconcile", "cfg", "--state-dir", stateDir)
	assert.Contains(t, out, "✔ fetched and applied main@sha1:"+second)
	assert.Contains(t, out, "◎ node edge: serving the newest revision; no proxy of this node is connected")

	node, err := runLegate(t, "status", "edge", "-o", "json", server)
	require.NoError(t, err)
	hashes := historyHashes(t, node)
	require.Len(t, hashes, 2)
	out = run("diff", "edge", hashes[1][:10], hashes[0][:10])
	assert.Contains(t, out, "-name: backend-a")
	assert.Contains(t, out, "+name: backend-b")
	assert.Contains(t, run("diff", "edge", hashes[0][:10]), "have the same resources")

	assert.Contains(t, run("untaint", "edge", hashes[0][:10], "--state-dir", stateDir), "is not tainted; nothing to clear")

	assert.Contains(t, run("suspend", "cfg", "--state-dir", stateDir), "source cfg suspended")
	assert.Contains(t, run("status"), "cfg (suspended)")
	_, err = runLegate(t, "reconcile", "cfg", server, "--state-dir", stateDir)
	assert.ErrorContains(t, err, `source "cfg" is suspended; legate resume cfg first`)
	assert.Contains(t, run("resume", "cfg", "--state-dir", stateDir), "source cfg resumed")
	assert.Contains(t, run("resume", "cfg", "--state-dir", stateDir), "source cfg not suspended")

	require.NoError(t, os.WriteFile(filepath.Join(repo.dir, "cluster.yaml"), []byte("{ not yaml"), 0o600))
	repo.git("commit", "-qam", "broken")
	out, err = runLegate(t, "reconcile", "cfg", server, "--state-dir", stateDir)
	assert.ErrorContains(t, err, "not applied", "a rejected commit fails reconcile")
	assert.Contains(t, out, "✗ main@sha1:")
	assert.Contains(t, out, "validation failed")
}

func historyHashes(t *testing.T, nodeJSON string) []string {
	t.Helper()
	var n statuspage.NodeView
	require.NoError(t, json.Unmarshal([]byte(nodeJSON), &n))
	var hashes []string
	for _, r := range n.History {
		hashes = append(hashes, r.Hash)
	}
	return hashes
}

func TestVersionFlagAndExamples(t *testing.T) {
	out, err := runLegate(t, "--version")
	require.NoError(t, err)
	assert.Equal(t, "legate dev (commit unknown)\n", out)

	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" || strings.HasPrefix(c.CommandPath(), "legate completion") {
			return
		}
		assert.NotEmpty(t, c.Example, "%s has no examples in its help", c.CommandPath())
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
}

// TestReadsCarryTheReadToken runs a legate serve whose reads need a token:
// status is refused readably without one, and works with the read token or
// with the admin token found in the state directory.
func TestReadsCarryTheReadToken(t *testing.T) {
	repo := gitRepo{t: t, dir: t.TempDir()}
	repo.git("init", "-q", "-b", "main")
	repo.commit("a")
	readToken := filepath.Join(t.TempDir(), "read-token")
	require.NoError(t, os.WriteFile(readToken, []byte("r3ad-t0ken-for-the-cli"), 0o600))
	stateDir := t.TempDir()
	srv, err := standalone.New(serveconfig.Config{
		StateDir: stateDir, DefaultNode: "edge", XDSAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", ReadTokenFile: readToken,
		Sources: []serveconfig.SourceConfig{{Name: "cfg", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}, standalone.Options{Render: newRenderOptions()})
	require.NoError(t, err)
	runUntilCleanup(t, srv)
	server := "--server=" + srv.HTTPAddr()
	t.Setenv("LEGATE_TOKEN", "")
	t.Setenv("LEGATE_TOKEN_FILE", "")

	_, err = runLegate(t, "status", server, "--state-dir", t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reading needs the read or admin token")
	assert.NotContains(t, err.Error(), "{", "the API's JSON is not dumped")

	out, err := runLegate(t, "status", server, "--token-file", readToken)
	require.NoError(t, err, out)
	assert.Contains(t, out, "edge")
	out, err = runLegate(t, "status", server, "--state-dir", stateDir)
	require.NoError(t, err, out)
	assert.Contains(t, out, "edge", "the admin token of a legate on this machine reads too")
}

// runUntilCleanup runs srv until the test ends, checks it stopped cleanly,
// and waits until it is ready.
func runUntilCleanup(t *testing.T, srv *standalone.Server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	require.Eventually(t, srv.Ready, 30*time.Second, 10*time.Millisecond)
}
