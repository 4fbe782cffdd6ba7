package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/standalone"
	"github.com/legate-dev/legate/test/internal/backend"
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
		var n standalone.NodeView
		return lg.getJSON("/api/v1/nodes/grpc-client", &n) == nil && inSyncOn(sha, 1)(n)
	}, waitFor, pollEvery, "node grpc-client is InSync on the example's commit")
}
