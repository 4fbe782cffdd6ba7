// Package envtest starts a real Kubernetes API server (kube-apiserver and
// etcd built from source by `make tools`) for legate's tests, with legate's
// CRDs installed.
package envtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	requireBinaries(t)
	cluster, env, err := launch(webhooks, crdDirs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop envtest API server: %v", err)
		}
	})
	return cluster
}

// requireBinaries fails (or skips, see tooling.Missing) a test when
// kube-apiserver or etcd is not there to start.
func requireBinaries(t testing.TB) {
	t.Helper()
	dir := assetsDir()
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if st, err := os.Stat(filepath.Join(dir, bin)); err != nil || st.IsDir() {
			tooling.Missing(t, bin, "not found in "+dir)
		}
	}
}

// launch starts an API server with legate's CRDs and those of crdDirs
// installed, and legate's webhook configurations when webhooks is set.
func launch(webhooks bool, crdDirs []string) (*Cluster, *crenvtest.Environment, error) {
	dir := assetsDir()
	env := &crenvtest.Environment{BinaryAssetsDirectory: dir}
	// legate's CRDs, generated into config/crd by make generate, are
	// installed in every API server started.
	root, err := tooling.RepoRoot()
	if err != nil {
		return nil, nil, fmt.Errorf("find the repository root for config/crd: %w", err)
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
		return nil, nil, fmt.Errorf("start envtest API server from %s: %w", dir, err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		_ = env.Stop()
		return nil, nil, fmt.Errorf("client for envtest API server: %w", err)
	}
	cluster := &Cluster{Config: cfg, Client: c, KubeConfig: env.KubeConfig}
	if webhooks {
		w := env.WebhookInstallOptions
		cluster.Webhooks = &Webhooks{
			Addr:    net.JoinHostPort(w.LocalServingHost, strconv.Itoa(w.LocalServingPort)),
			CertDir: w.LocalServingCertDir, CAPEM: w.LocalServingCAData,
		}
	}
	return cluster, env, nil
}

// Shared is one API server for the tests of a package that each need no
// more than a namespace of their own: an API server costs about 3 s of
// CPU to start (docs/testing.md), and a package that started one per
// test paid that for each. It starts on the first Namespace and runs
// until the package's tests end:
//
//	var apiServer envtest.Shared
//
//	func TestMain(m *testing.M) { os.Exit(apiServer.Run(m)) }
//
// Only legate's CRDs are installed. A test that starts a controller, or
// reads or writes anything cluster-scoped, starts its own with Start.
type Shared struct {
	mu      sync.Mutex
	cluster *Cluster
	env     *crenvtest.Environment
	err     error
	created int
}

// Namespace returns the shared API server, started on first use, and
// the name of a namespace created in it for this test alone.
func (s *Shared) Namespace(t testing.TB) (*Cluster, string) {
	t.Helper()
	requireBinaries(t)
	s.mu.Lock()
	if s.cluster == nil && s.err == nil {
		s.cluster, s.env, s.err = launch(false, nil)
	}
	cluster, err := s.cluster, s.err
	s.created++
	name := fmt.Sprintf("test-%d", s.created)
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := cluster.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Logf("namespace %s of the package's API server", name)
	return cluster, name
}

// Run runs the package's tests, then stops the API server if they
// started it, and returns m.Run's exit code.
func (s *Shared) Run(m *testing.M) int {
	defer s.Stop()
	return m.Run()
}

// Stop stops the shared API server, if one was started.
func (s *Shared) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.env != nil {
		if err := s.env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop the shared envtest API server: %v\n", err)
		}
		s.cluster, s.env = nil, nil
	}
}
