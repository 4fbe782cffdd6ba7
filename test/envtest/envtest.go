// Package envtest starts a real Kubernetes API server (kube-apiserver and
// etcd built from source by `make tools`) for legate's tests, with legate's
// CRDs installed.
package envtest

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/legate-dev/legate/test/internal/tooling"
)

// Cluster is a running API server.
type Cluster struct {
	Config *rest.Config
	Client client.Client
	// KubeConfig is a kubeconfig file's content that reaches the API
	// server as its administrator.
	KubeConfig []byte
	// Webhooks is where the API server calls legate's admission webhooks
	// (StartWithWebhooks only).
	Webhooks *Webhooks
}

// Webhooks is where a test serves the webhooks of config/webhook: the API
// server calls https://Addr with the certificate of CertDir (tls.crt,
// tls.key), which CAPEM signs.
type Webhooks struct {
	Addr    string
	CertDir string
	CAPEM   []byte
}

// assetsDir returns the directory holding kube-apiserver and etcd:
// KUBEBUILDER_ASSETS when set, else the checkout's bin/.
func assetsDir() string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	return tooling.BinDir()
}

// FluxCRDs returns the directory of Flux's GitRepository and
// OCIRepository CRDs that `make tools` takes from the pinned
// source-controller module (LEGATE_FLUX_CRDS, else the newest under
// bin/flux-crds).
func FluxCRDs(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("LEGATE_FLUX_CRDS")
	if dir == "" {
		found, _ := filepath.Glob(filepath.Join(tooling.BinDir(), "flux-crds", "v*"))
		if len(found) > 0 {
			dir = found[len(found)-1]
		}
	}
	if st, err := os.Stat(dir); dir == "" || err != nil || !st.IsDir() {
		tooling.Missing(t, "Flux's source CRDs", "no directory "+dir)
	}
	return dir
}

// Start runs a fresh API server for the test and stops it in t.Cleanup,
// with legate's CRDs and those of crdDirs installed.
func Start(t testing.TB, crdDirs ...string) *Cluster {
	t.Helper()
	return start(t, false, crdDirs)
}

// StartWithWebhooks is Start with legate's webhook configurations
// (config/webhook) registered: the API server runs its real admission
// chain and calls the webhooks over TLS at Cluster.Webhooks.
func StartWithWebhooks(t testing.TB, crdDirs ...string) *Cluster {
	t.Helper()
	return start(t, true, crdDirs)
}

func start(t testing.TB, webhooks bool, crdDirs []string) *Cluster {
	t.Helper()
	dir := assetsDir()
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if st, err := os.Stat(filepath.Join(dir, bin)); err != nil || st.IsDir() {
			tooling.Missing(t, bin, "not found in "+dir)
		}
	}
	env := &crenvtest.Environment{BinaryAssetsDirectory: dir}
	// legate's CRDs, generated into config/crd by make generate, are
	// installed in every API server started.
	root, err := tooling.RepoRoot()
	if err != nil {
		t.Fatalf("find the repository root for config/crd: %v", err)
	}
	env.CRDDirectoryPaths = append([]string{filepath.Join(root, "config", "crd")}, crdDirs...)
	env.ErrorIfCRDPathMissing = true
	if webhooks {
		env.WebhookInstallOptions = crenvtest.WebhookInstallOptions{
			Paths: []string{filepath.Join(root, "config", "webhook")}, IgnoreErrorIfPathMissing: false,
			LocalServingHost: "127.0.0.1",
		}
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start envtest API server from %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop envtest API server: %v", err)
		}
	})
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatalf("client for envtest API server: %v", err)
	}
	cluster := &Cluster{Config: cfg, Client: c, KubeConfig: env.KubeConfig}
	if webhooks {
		w := env.WebhookInstallOptions
		cluster.Webhooks = &Webhooks{
			Addr:    net.JoinHostPort(w.LocalServingHost, strconv.Itoa(w.LocalServingPort)),
			CertDir: w.LocalServingCertDir, CAPEM: w.LocalServingCAData,
		}
	}
	return cluster
}
