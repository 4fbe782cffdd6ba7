package envtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestNamespaceRoundTrip proves the harness runs a real API server: an object
// written through it is stored (by etcd) and read back with server-set fields.
func TestNamespaceRoundTrip(t *testing.T) {
	cluster := Start(t)
	ctx := context.Background()

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   "legate-envtest",
		Labels: map[string]string{"app.kubernetes.io/name": "legate"},
	}}
	require.NoError(t, cluster.Client.Create(ctx, ns))

	var got corev1.Namespace
	require.NoError(t, cluster.Client.Get(ctx, client.ObjectKey{Name: ns.Name}, &got))
	assert.Equal(t, "legate", got.Labels["app.kubernetes.io/name"])
	assert.NotEmpty(t, got.UID, "the API server assigns a UID")
	assert.NotEmpty(t, got.ResourceVersion, "etcd assigns a resource version")

	var list corev1.NamespaceList
	require.NoError(t, cluster.Client.List(ctx, &list))
	names := make([]string, 0, len(list.Items))
	for _, n := range list.Items {
		names = append(names, n.Name)
	}
	assert.Contains(t, names, "legate-envtest")
	assert.Contains(t, names, "kube-system", "namespaces created by the API server itself")
}

// Tests that share a package's API server each get a namespace of their
// own in the one server, and Stop ends it.
func TestSharedStartsOneAPIServer(t *testing.T) {
	var shared Shared
	defer shared.Stop()
	ctx := context.Background()

	first, ns1 := shared.Namespace(t)
	second, ns2 := shared.Namespace(t)
	assert.Same(t, first, second, "one API server for both")
	assert.NotEqual(t, ns1, ns2)
	for _, name := range []string{ns1, ns2} {
		var ns corev1.Namespace
		require.NoError(t, first.Client.Get(ctx, client.ObjectKey{Name: name}, &ns), "namespace %s", name)
	}

	shared.Stop()
	var ns corev1.Namespace
	assert.Error(t, first.Client.Get(ctx, client.ObjectKey{Name: ns1}, &ns), "the API server is gone after Stop")
}

// The API server runs with apiServerGC: its own runtime says so on
// /metrics.
func TestAPIServerRunsWithItsGCTuning(t *testing.T) {
	cluster := Start(t)
	rc, err := rest.RESTClientFor(withPlainCodec(cluster.Config))
	require.NoError(t, err)
	body, err := rc.Get().AbsPath("/metrics").DoRaw(context.Background())
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^go_gc_gogc_percent `+apiServerGC["GOGC"]+`$`, string(body))
	assert.Regexp(t, `(?m)^go_gc_gomemlimit_bytes 1\.073741824e\+09$`, string(body), "GOMEMLIMIT %s", apiServerGC["GOMEMLIMIT"])
}

// The wrappers run the binaries of the assets directory, wherever it is,
// with their arguments as given and the collector's variables set.
func TestWrappersRunTheAssetsWithTheirGCTuning(t *testing.T) {
	assets := filepath.Join(t.TempDir(), "it's here")
	require.NoError(t, os.Mkdir(assets, 0o700))
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		fake := "#!/bin/sh\necho \"" + bin + " GOGC=$GOGC GOMEMLIMIT=$GOMEMLIMIT\"; for a in \"$@\"; do echo \"[$a]\"; done\n"
		require.NoError(t, os.WriteFile(filepath.Join(assets, bin), []byte(fake), 0o700))
	}
	dir, err := binaries(assets)
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		out, err := exec.Command(filepath.Join(dir, bin), "--flag=a b", "-h").CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Equal(t, bin+" GOGC=400 GOMEMLIMIT=1GiB\n[--flag=a b]\n[-h]\n", string(out))
	}
}

// withPlainCodec is cfg for a raw REST client of no API group.
func withPlainCodec(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	c.GroupVersion = &corev1.SchemeGroupVersion
	return c
}
