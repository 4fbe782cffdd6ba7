package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/test/envtest"
)

// TestStatusReadsTheCluster runs a real controller on envtest and reads
// its cluster with legate status --kubeconfig: the same tables and states
// as against a legate serve, Pending while no proxy is connected, then
// Rejected with the validation error after a refused edit.
func TestStatusReadsTheCluster(t *testing.T) {
	cluster := envtest.Start(t)
	ctx := context.Background()
	c, err := newKubeClient(cluster.Config)
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "legate-system"}}))
	crlog.SetLogger(logr.Discard())
	ctl, err := controller.New(controller.Options{
		Config: cluster.Config, Namespace: "legate-system", XDSAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", StateDir: t.TempDir(),
		Render: newPolicyRenderOptions(), Log: logr.Discard(),
	})
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- ctl.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("the controller did not stop")
		}
	})
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, cluster.KubeConfig, 0o600))

	data, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "envoyconfig.yaml"))
	require.NoError(t, err)
	var ec v1alpha1.EnvoyConfig
	require.NoError(t, yaml.Unmarshal(data, &ec))
	ec.Namespace = "default"
	ec.Spec.Resources = ec.Spec.Resources[:2] // no TLS Secret here
	require.NoError(t, c.Create(ctx, &ec))
	key := crclient.ObjectKeyFromObject(&ec)
	require.Eventually(t, func() bool {
		var got v1alpha1.EnvoyConfig
		return c.Get(ctx, key, &got) == nil && got.Status.State == "Pending" && meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady)
	}, 60*time.Second, 50*time.Millisecond)

	out, err := runLegate(t, "status", "--kubeconfig", kubeconfig, "-n", "default")
	require.NoError(t, err, out)
	assert.Regexp(t, `edge\s+Pending\s+[0-9a-f]{12}\s+default/edge@1\s+none connected`, out)
	assert.Contains(t, out, "nodes: 1 pending")
	assert.Contains(t, out, "envoyconfig/default/edge")

	var got v1alpha1.EnvoyConfig
	require.NoError(t, c.Get(ctx, key, &got))
	got.Spec.Resources[0].Value.Raw = []byte(`{"name":"backend","type":"STRICT_DNS","connect_timeout":"-1s"}`)
	require.NoError(t, c.Update(ctx, &got))
	require.Eventually(t, func() bool {
		var now v1alpha1.EnvoyConfig
		return c.Get(ctx, key, &now) == nil && now.Status.State == "Rejected"
	}, 60*time.Second, 50*time.Millisecond)

	out, err = runLegate(t, "status", "--kubeconfig", kubeconfig, "-n", "default")
	require.NoError(t, err, out)
	assert.Regexp(t, `edge\s+Rejected\s+[0-9a-f]{12}\s+default/edge@1\s+none connected\s+default/edge@2 rejected by validation`, out)
	assert.Contains(t, out, "nodes: 1 newest commit rejected")
	assert.Contains(t, out, "connect_timeout", "the validation error is shown")
	assert.Contains(t, out, "edge: newest change default/edge@2 rejected by validation: ", "an object has no commit")
	assert.Contains(t, out, "→ Fix the EnvoyConfig and apply it again; legate validate FILE", "an object is fixed by an apply, not a commit")
	assert.NotContains(t, out, "commit; legate validate DIR")

	out, err = runLegate(t, "status", "edge", "--kubeconfig", kubeconfig, "-n", "default")
	require.NoError(t, err, out)
	assert.Contains(t, out, "State:    Rejected")
	assert.Contains(t, out, "Newest:   change default/edge@2 rejected by validation: ")
	assert.Regexp(t, `Served:   [0-9a-f]{12} from default/edge@1\n`, out, "no empty xDS version")
	assert.Regexp(t, `\*\s+[0-9a-f]{12}\s+-\s+envoyconfig/default/edge`, out, "the history comes from the EnvoyConfigRevisions")

	out, err = runLegate(t, "status", "--kubeconfig", kubeconfig, "-n", "other")
	require.NoError(t, err, out)
	assert.NotContains(t, out, "edge", "another namespace's nodes are not shown")
}
