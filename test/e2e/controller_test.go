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
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/statuspage"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/legateproc"
)

// `legate controller` run as a user runs it outside a cluster: with
// nothing but --kubeconfig, --xds-addr and --http-addr it serves a sample
// EnvoyConfig, shows it on /api/v1/nodes and the status page, exports its
// metrics, and stops cleanly on SIGTERM.
func TestControllerCommand(t *testing.T) {
	_, c, kubeconfig := controllerCluster(t, envtest.Start)
	ctx := context.Background()

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

// `legate controller` with its webhooks and its own PKI, as the
// Deployment runs it: the API server calls the webhooks over TLS once the
// controller has written its CA into the configurations' caBundle; a Pod
// labelled for injection is stored with its sidecar (the flags' xDS
// address in its bootstrap), a MARIN3R-annotated one too, the proxy's
// certificate is issued into the Secret it mounts, and a broken
// EnvoyConfig is refused at apply and at a server-side dry run alike.
func TestControllerCommandInjectsAndValidates(t *testing.T) {
	cluster, c, kubeconfig := controllerCluster(t, envtest.StartWithWebhooks)
	ctx := context.Background()

	httpAddr := legateproc.LoopbackAddr(t)
	var logs strings.Builder
	proc, err := legateproc.Start(legateBin, []string{
		"controller", "--kubeconfig", kubeconfig, "--xds-addr", legateproc.LoopbackAddr(t),
		"--http-addr", httpAddr, "--state-dir", t.TempDir(),
		"--webhook-addr", cluster.Webhooks.Addr, "--pki-ca-secret", "legate-ca",
		"--pki-webhook-hosts", "127.0.0.1", "--pki-xds-hosts", "127.0.0.1",
		"--sidecar-xds-address", "xds.example:18000", "--sidecar-image", "envoyproxy/envoy:v1.36.2",
	}, &logs)
	require.NoError(t, err)
	t.Cleanup(func() { proc.Stop(10 * time.Second) })
	proc.WaitReady(t, "http://"+httpAddr+"/readyz", 60*time.Second, 50*time.Millisecond)

	pod := func(labels, annotations map[string]string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "web-", Namespace: "default", Labels: labels, Annotations: annotations},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
		}
	}
	legatePod := pod(map[string]string{"legate.dev/inject": "enabled"}, map[string]string{"legate.dev/node-id": "web"})
	require.Eventually(t, func() bool {
		p := legatePod.DeepCopy()
		if c.Create(ctx, p) != nil {
			return false
		}
		legatePod = p
		return true
	}, 60*time.Second, 200*time.Millisecond, "the API server reaches the webhooks once legate wrote its CA:\n%s", &logs)
	var stored corev1.Pod
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(legatePod), &stored))
	require.NotEmpty(t, stored.Spec.InitContainers)
	sidecar := stored.Spec.InitContainers[0]
	assert.Equal(t, "envoy-sidecar", sidecar.Name)
	assert.Equal(t, "envoyproxy/envoy:v1.36.2", sidecar.Image)
	assert.Contains(t, strings.Join(sidecar.Args, " "), "xds.example", "the flags' xDS address is in the bootstrap")

	marin3r := pod(map[string]string{"marin3r.3scale.net/status": "enabled"}, map[string]string{
		"marin3r.3scale.net/node-id": "kuard", "marin3r.3scale.net/ports": "https:8443",
	})
	require.NoError(t, c.Create(ctx, marin3r))
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(marin3r), &stored))
	require.NotEmpty(t, stored.Spec.InitContainers)
	assert.Equal(t, int32(8443), stored.Spec.InitContainers[0].Ports[0].ContainerPort)

	for _, node := range []string{"web", "kuard"} {
		require.Eventually(t, func() bool {
			var s corev1.Secret
			return c.Get(ctx, client.ObjectKey{Namespace: "default", Name: pki.ProxySecretName(node)}, &s) == nil && len(s.Data[pki.ProxyCertKey]) > 0
		}, 30*time.Second, 50*time.Millisecond, "node %s's certificate is issued:\n%s", node, &logs)
	}

	broken := &v1alpha1.EnvoyConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "broken", Namespace: "default"},
		Spec: v1alpha1.EnvoyConfigSpec{NodeID: "broken", Resources: []v1alpha1.Resource{{
			Type: "cluster", Value: &runtime.RawExtension{Raw: []byte(`{"name":"backend","type":"STRICT_DNS","connect_timeout":"-1s"}`)},
		}}},
	}
	err = c.Create(ctx, broken.DeepCopy())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "connect_timeout")
	dry := c.Create(ctx, broken.DeepCopy(), client.DryRunAll)
	require.Error(t, dry)
	assert.Equal(t, err.Error(), dry.Error(), "a server-side dry run gives the same verdict")

	metrics := get(t, "http://"+httpAddr+"/metrics")
	assert.Contains(t, metrics, `legate_admission_duration_seconds_count{allowed="true",webhook="pods"}`)
	assert.Contains(t, metrics, `legate_admission_duration_seconds_count{allowed="false",webhook="envoyconfigs"} 2`)
}

// controllerCluster starts an API server with start and returns it, a
// client knowing legate's types, and a kubeconfig file reaching it as its
// administrator, with the controller's namespace created.
func controllerCluster(t *testing.T, start func(testing.TB, ...string) *envtest.Cluster) (*envtest.Cluster, client.Client, string) {
	t.Helper()
	cluster := start(t)
	scheme, err := controller.Scheme()
	require.NoError(t, err)
	c, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	require.NoError(t, c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "legate-system"}}))
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, cluster.KubeConfig, 0o600))
	return cluster, c, kubeconfig
}
