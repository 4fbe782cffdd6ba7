package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/statuspage"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/legateproc"
)

// `legate controller` run as a user runs it outside a cluster: with
// nothing but --kubeconfig, --xds-addr and --http-addr it serves a sample
// EnvoyConfig, shows it on /api/v1/nodes and the status page, exports its
// metrics, and stops cleanly on SIGTERM.
func TestControllerCommand(t *testing.T) {
	cluster := envtest.Start(t)
	scheme, err := controller.Scheme()
	require.NoError(t, err)
	c, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "legate-system"}}))
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, cluster.KubeConfig, 0o600))

	httpAddr := legateproc.LoopbackAddr(t)
	var logs strings.Builder
	args := []string{
		"controller", "--kubeconfig", kubeconfig, "--xds-addr", legateproc.LoopbackAddr(t),
		"--http-addr", httpAddr, "--state-dir", t.TempDir(),
	}
	proc, err := legateproc.Start(legateBin, args, &logs)
	require.NoError(t, err)
	t.Cleanup(func() { proc.Stop(10 * time.Second) })
	base := "http://" + httpAddr
	proc.WaitReady(t, base+"/readyz", 60*time.Second, 50*time.Millisecond)

	data, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "envoyconfig.yaml"))
	require.NoError(t, err)
	var ec v1alpha1.EnvoyConfig
	require.NoError(t, yaml.UnmarshalStrict(data, &ec))
	ec.Namespace = "default"
	ec.Spec.Resources = ec.Spec.Resources[:2] // no Secret in this cluster
	require.NoError(t, c.Create(ctx, &ec))

	var nodes []statuspage.NodeView
	require.Eventually(t, func() bool {
		nodes = nil
		return getJSON(base+"/api/v1/nodes", &nodes) && len(nodes) == 1 && nodes[0].Published != nil
	}, 60*time.Second, 50*time.Millisecond, "the sample's node is published:\n%s", &logs)
	assert.Equal(t, ec.Spec.NodeID, nodes[0].NodeID)
	assert.Equal(t, "default/edge@1", nodes[0].Published.Revision, "the object and generation it came from")

	assert.Contains(t, nodes[0].Summary, "serving the newest revision", "the node view both homes show")
	page := get(t, base+"/")
	assert.Contains(t, page, ec.Spec.NodeID)
	assert.Contains(t, page, "envoyconfig/default/edge")
	assert.Contains(t, page, `<h2 id="states">What the states mean</h2>`, "the status page both homes share")
	metrics := get(t, base+"/metrics")
	assert.Contains(t, metrics, "legate_revisions_")
	assert.Contains(t, metrics, "controller_runtime_reconcile_total")

	require.NoError(t, proc.Signal(syscall.SIGTERM))
	select {
	case <-proc.Done():
		assert.True(t, proc.State().Success(), "exits 0 on SIGTERM:\n%s", &logs)
	case <-time.After(30 * time.Second):
		t.Fatal("legate controller did not stop on SIGTERM")
	}
}

func getJSON(url string, v any) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(v) == nil
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, url)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}
