package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/statuspage"
	"github.com/legate-dev/legate/test/internal/backend"
	"github.com/legate-dev/legate/test/internal/legateproc"
	"github.com/legate-dev/legate/test/internal/tooling"
)

// TestGRPCExampleServesRealRPCs serves examples/grpc as it is written (only
// the backend's port is moved to the test's backend) and routes a real RPC
// through it with grpc-go's xDS client, so the example stays one that works.
func TestGRPCExampleServesRealRPCs(t *testing.T) {
	root, err := tooling.RepoRoot()
	require.NoError(t, err)
	dir := filepath.Join(root, "examples", "grpc")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)

	be := startBackend(t, "example-backend")
	files := map[string]string{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		files[e.Name()] = strings.ReplaceAll(string(data), "port_value: 8081", "port_value: "+strconv.Itoa(be.Port))
	}
	require.Contains(t, files["greeter.yaml"], "port_value: "+strconv.Itoa(be.Port), "the example names its backend port")

	repo := newGitRepo(t)
	sha := repo.Commit("examples/grpc", files)
	lg := serveRepo(t, repo, legateOptions{})

	// The example is for node grpc-client dialing xds:///greeter.
	client := backend.Dial(t, lg.xdsAddr, "grpc-client", "example-pod", "greeter")
	require.Eventually(t, func() bool { return client.Call() == "example-backend" }, waitFor, pollEvery,
		"an RPC through examples/grpc reaches the backend")
	require.Eventually(t, func() bool {
		var n statuspage.NodeView
		return lg.getJSON("/api/v1/nodes/grpc-client", &n) == nil && inSyncOn(sha, 1)(n)
	}, waitFor, pollEvery, "node grpc-client is InSync on the example's commit")
}

// TestMakeRunServesQuickstart runs the script behind `make run` (on other
// ports) and checks that it serves examples/quickstart's node "edge" from
// the local repository it creates.
func TestMakeRunServesQuickstart(t *testing.T) {
	root, err := tooling.RepoRoot()
	require.NoError(t, err)
	xdsAddr, httpAddr := legateproc.LoopbackAddr(t), legateproc.LoopbackAddr(t)
	var out legateproc.Output
	cmd := exec.Command("bash", filepath.Join(root, "hack", "run.sh"), legateBin,
		"--xds-addr", xdsAddr, "--http-addr", httpAddr)
	cmd.Env = append(os.Environ(), "LEGATE_RUN_DIR="+t.TempDir())
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("make run output:\n%s", out.String())
		}
	})

	var n statuspage.NodeView
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + httpAddr + "/api/v1/nodes/edge")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&n) == nil && n.Published != nil
	}, waitFor, pollEvery, "make run publishes node edge")
	require.Len(t, n.Published.Commit, 40, "the revision records the quickstart commit")
	require.Contains(t, out.String(), "serving the config repository", "make run prints how to use it")
}
