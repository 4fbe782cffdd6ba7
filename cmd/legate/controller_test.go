package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/legate-dev/legate/revisions/kubestore"
	"github.com/legate-dev/legate/test/envtest"
)

// legate controller against a cluster without its namespace stops before
// serving anything, saying how to fix it, instead of reporting ready and
// failing every revision write; once the namespace exists the check passes.
func TestControllerRefusesAMissingNamespace(t *testing.T) {
	cluster := envtest.Start(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, cluster.KubeConfig, 0o600))
	run := func(ctx context.Context) (string, error) {
		var out bytes.Buffer
		cmd := newRootCommand()
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs([]string{
			"controller", "--kubeconfig", kubeconfig, "--controller-namespace", "legate-system",
			"--xds-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--state-dir", t.TempDir(),
		})
		err := cmd.ExecuteContext(ctx)
		return out.String(), err
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := run(ctx)
	require.Error(t, err, "the controller starts without its namespace: %s", out)
	assert.Contains(t, err.Error(), "--controller-namespace legate-system does not exist")
	assert.Contains(t, err.Error(), "kubectl create namespace legate-system")
	assert.NotContains(t, out, `"serving"`, "nothing is served")

	require.NoError(t, cluster.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "legate-system"}}))
	assert.NoError(t, kubestore.CheckNamespace(context.Background(), cluster.Config, "legate-system"), "the namespace exists now")
}
