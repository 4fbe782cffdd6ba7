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
	"slices"
	"strconv"
	"strings"
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
	cluster, stop, err := launch(webhooks, crdDirs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
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

// apiServerGC is the collector's tuning kube-apiserver and etcd run
// with. At Go's default (GOGC 100) their collector took a sixth of an API
// server's CPU (perf of a start: 17 % in the mark workers). With GOGC at
// 400, test/fleet used 79–95 s of CPU against 104–113 s, and
// test/controller, which starts 41 API servers, 146–173 s against
// 161–181 s; GOMEMLIMIT keeps the largest, test/fleet's with its 1 000
// objects, at 1.1 GB of RSS where GOGC alone let it reach 1.9 GB (0.8 GB
// at the default), for most of the saving: 81–92 s of CPU
// (docs/testing.md, "The API servers' collector").
var apiServerGC = map[string]string{"GOGC": "400", "GOMEMLIMIT": "1GiB"}

// binaries writes into a new directory two sh wrappers that run the
// kube-apiserver and etcd of assets with apiServerGC: envtest starts its
// processes with the test's own environment, and setting the variables
// there would tune every process a test starts (legate's own binaries,
// git, Gitea), whose memory some tests bound. exec keeps the PID that
// envtest stops. The caller removes the directory.
func binaries(assets string) (dir string, err error) {
	dir, err = os.MkdirTemp("", "legate-envtest-")
	if err != nil {
		return "", fmt.Errorf("directory for the API server's wrappers: %w", err)
	}
	vars := make([]string, 0, len(apiServerGC))
	for name, value := range apiServerGC {
		vars = append(vars, name+"="+shellQuote(value))
	}
	slices.Sort(vars)
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		script := fmt.Sprintf("#!/bin/sh\n%s exec %s \"$@\"\n", strings.Join(vars, " "), shellQuote(filepath.Join(assets, bin)))
		if err := os.WriteFile(filepath.Join(dir, bin), []byte(script), 0o700); err != nil {
			_ = os.RemoveAll(dir)
			return "", fmt.Errorf("write the %s wrapper: %w", bin, err)
		}
	}
	return dir, nil
}

// shellQuote quotes s as one word for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// launch starts an API server with legate's CRDs and those of crdDirs
// installed, and legate's webhook configurations when webhooks is set.
// stop stops it.
func launch(webhooks bool, crdDirs []string) (cluster *Cluster, stop func() error, err error) {
	// legate's CRDs, generated into config/crd by make generate, are
	// installed in every API server started.
	root, err := tooling.RepoRoot()
	if err != nil {
		return nil, nil, fmt.Errorf("find the repository root for config/crd: %w", err)
	}
	wrappers, err := binaries(assetsDir())
	if err != nil {
		return nil, nil, err
	}
	// Paths, not BinaryAssetsDirectory: envtest prefers KUBEBUILDER_ASSETS
	// to the latter.
	env := &crenvtest.Environment{}
	env.ControlPlane.GetAPIServer().Path = filepath.Join(wrappers, "kube-apiserver")
	env.ControlPlane.Etcd = &crenvtest.Etcd{Path: filepath.Join(wrappers, "etcd")}
	stop = func() error {
		defer os.RemoveAll(wrappers)
		return env.Stop()
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
		_ = os.RemoveAll(wrappers)
		return nil, nil, fmt.Errorf("start envtest API server from %s: %w", assetsDir(), err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		_ = stop()
		return nil, nil, fmt.Errorf("client for envtest API server: %w", err)
	}
	cluster = &Cluster{Config: cfg, Client: c, KubeConfig: env.KubeConfig}
	if webhooks {
		w := env.WebhookInstallOptions
		cluster.Webhooks = &Webhooks{
			Addr:    net.JoinHostPort(w.LocalServingHost, strconv.Itoa(w.LocalServingPort)),
			CertDir: w.LocalServingCertDir, CAPEM: w.LocalServingCAData,
		}
	}
	return cluster, stop, nil
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
	stop    func() error
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
		s.cluster, s.stop, s.err = launch(false, nil)
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
	if s.stop != nil {
		if err := s.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop the shared envtest API server: %v\n", err)
		}
		s.cluster, s.stop = nil, nil
	}
}
