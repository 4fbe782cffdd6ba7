package controller_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/pipeline/readiness"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/ctltest"
)

// hungServer accepts HTTP requests (Git's ref advertisement among them)
// and never answers, as a hung Git server does; it counts the requests it
// holds.
type hungServer struct {
	*httptest.Server
	holding, peak atomic.Int64
}

func newHungServer(t *testing.T) *hungServer {
	s := &hungServer{}
	stop := make(chan struct{})
	s.Server = httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		n := s.holding.Add(1)
		defer s.holding.Add(-1)
		for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
		}
		select {
		case <-r.Context().Done(): // the client gave up
		case <-stop:
		}
	}))
	t.Cleanup(func() { close(stop); s.Close() })
	return s
}

// gitSource is an EnvoySource following url, fetched once an hour.
func gitSource(ns, name, url string) *v1alpha1.EnvoySource {
	return &v1alpha1.EnvoySource{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.EnvoySourceSpec{
			Git: &v1alpha1.GitSource{URL: url}, Path: "envoy", Interval: metav1.Duration{Duration: time.Hour},
		},
	}
}

func createNamespaces(t *testing.T, c client.Client, names ...string) {
	t.Helper()
	for _, ns := range names {
		require.NoError(t, c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
}

// fluxSource is a GitRepository of ns whose artifact holds files, and an
// EnvoySource reading it.
func fluxSource(t *testing.T, c client.Client, arts *artifactServer, ns, name string, files map[string]string) (*v1alpha1.EnvoySource, string) {
	t.Helper()
	ctx := context.Background()
	repo := createGitRepository(t, c, ns, name, "https://git.example/"+ns+"/"+name)
	sha := strings.Repeat("1", 40)
	url, digest := arts.put(t, "/"+ns+"/"+name+"/"+sha+".tar.gz", files)
	setArtifact(t, c, repo, url, digest, "main@sha1:"+sha)
	es := &v1alpha1.EnvoySource{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.EnvoySourceSpec{
			SourceRef: &v1alpha1.FluxSourceRef{Kind: "GitRepository", Name: name}, Path: "./envoy",
			Interval: metav1.Duration{Duration: time.Hour},
		},
	}
	require.NoError(t, c.Create(ctx, es))
	return es, "main@sha1:" + sha
}

// Issue 23, finding 5: one shared fetch worker let two hung Git sources
// delay every other namespace's reconciles by two minutes. With the
// controller's defaults, four EnvoySources of one namespace whose server
// never answers hold at most two fetch workers, and an EnvoySource of
// another namespace is fetched and applied while they still hang (well
// within their 60 s fetch timeout). Over its per-source budget, an
// EnvoySource is refused naming itself and the limit.
func TestHungSourcesDoNotDelayAnotherNamespace(t *testing.T) {
	t.Parallel()
	cluster := envtest.Start(t, envtest.FluxCRDs(t))
	c := ctltest.Client(t, cluster.Config)
	start(t, cluster.Config)
	ctx := context.Background()
	createNamespaces(t, c, "team-a", "team-b")
	hung := newHungServer(t)
	arts := newArtifactServer(t)

	for i := range 4 {
		require.NoError(t, c.Create(ctx, gitSource("team-a", fmt.Sprintf("hung-%d", i), fmt.Sprintf("%s/repo-%d.git", hung.URL, i))))
	}
	require.Eventually(t, func() bool { return hung.holding.Load() > 0 }, 60*time.Second, 50*time.Millisecond, "team-a's fetches hang")

	es, revision := fluxSource(t, c, arts, "team-b", "edge", greeterFiles("a", 1, 2))
	require.Eventually(t, func() bool {
		return getSource(t, c, client.ObjectKeyFromObject(es)).Status.LastAppliedRevision == revision
	}, 30*time.Second, 50*time.Millisecond, "team-b's EnvoySource is applied while team-a's fetches hang")
	assert.Positive(t, hung.holding.Load(), "team-a's fetches still hang: team-b did not wait for their timeout")
	assert.EqualValues(t, sources.DefaultFetchesPerNamespace, hung.peak.Load(), "team-a never held more workers than its share")

	// 40 MiB of YAML, a few hundred KiB on the wire.
	bomb, _ := fluxSource(t, c, arts, "team-b", "bomb", map[string]string{"envoy/big.yaml": strings.Repeat(" ", 40<<20)})
	var ready *metav1.Condition
	require.Eventually(t, func() bool {
		ready = readyOf(getSource(t, c, client.ObjectKeyFromObject(bomb)))
		return ready != nil && ready.Reason == readiness.ReasonFetchFailed
	}, 30*time.Second, 50*time.Millisecond)
	assert.Contains(t, ready.Message, "EnvoySource team-b/bomb: ")
	assert.Contains(t, ready.Message, "exceed 32 MiB, the per-source limit (at envoy/big.yaml)")
}

// A fetch whose server never answers ends at the per-fetch timeout: the
// EnvoySource says so, and the connection to the hung server is closed.
func TestHungFetchEndsAtItsTimeout(t *testing.T) {
	t.Parallel()
	cluster := envtest.Start(t)
	c := ctltest.Client(t, cluster.Config)
	startWith(t, cluster.Config, func(o *controller.Options) { o.Fetch.Timeout = 2 * time.Second })
	createNamespaces(t, c, "team-a")
	hung := newHungServer(t)
	es := gitSource("team-a", "hung", hung.URL+"/repo.git")
	require.NoError(t, c.Create(context.Background(), es))

	var ready *metav1.Condition
	require.Eventually(t, func() bool {
		ready = readyOf(getSource(t, c, client.ObjectKeyFromObject(es)))
		return ready != nil && ready.Reason == readiness.ReasonFetchFailed
	}, 30*time.Second, 50*time.Millisecond, "the fetch ends at 2 s, long before the Git driver's own 60 s")
	assert.Contains(t, ready.Message, "EnvoySource team-a/hung: the fetch was stopped at the per-fetch timeout of 2s")
	require.Eventually(t, func() bool { return hung.holding.Load() == 0 }, 30*time.Second, 50*time.Millisecond,
		"the hung request is abandoned")
}

// configMapReads records the paths of the ConfigMap requests a client
// makes, and the bytes it reads in their answers.
type configMapReads struct {
	mu    sync.Mutex
	paths map[string]int64
}

func (r *configMapReads) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err != nil || !strings.Contains(req.URL.Path, "/configmaps") {
			return resp, err
		}
		resp.Body = &countingBody{ReadCloser: resp.Body, add: func(n int) {
			r.mu.Lock()
			r.paths[req.URL.Path] += int64(n)
			r.mu.Unlock()
		}}
		return resp, nil
	})
}

func (r *configMapReads) snapshot() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int64, len(r.paths))
	for p, n := range r.paths {
		out[p] = n
	}
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type countingBody struct {
	io.ReadCloser
	add func(int)
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.add(n)
	return n, err
}

// Issue 23, finding 5: ConfigMaps labelled legate.dev/policy were cached
// from every namespace (60 × 0.9 MiB added 90 MB per replica), though
// only the controller's namespace binds. Tenants' labelled ConfigMaps
// never reach the controller; the controller's own still bind.
func TestPolicyConfigMapsOfOtherNamespacesAreNotCached(t *testing.T) {
	t.Parallel()
	cluster := envtest.Start(t)
	c := ctltest.Client(t, cluster.Config)
	ctx := context.Background()
	createNamespaces(t, c, "team-a")
	big := strings.Repeat("// padding\n", 80_000) // 0.9 MiB
	for i := range 5 {
		require.NoError(t, c.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("rules-%d", i), Namespace: "team-a", Labels: map[string]string{controller.PolicyLabel: "true"}},
			Data:       map[string]string{"p.cue": big},
		}))
	}
	reads := &configMapReads{paths: map[string]int64{}}
	cfg := rest.CopyConfig(cluster.Config)
	cfg.WrapTransport = reads.wrap
	startWith(t, cfg, func(*controller.Options) {})

	// A policy of the controller's namespace still binds: the served
	// EnvoyConfig that breaks it is refused.
	ec := sample(t) // its cluster has connect_timeout: 2s
	require.NoError(t, c.Create(ctx, ec))
	var r *metav1.Condition
	ready := func() *metav1.Condition {
		return meta.FindStatusCondition(get(t, c, ec).Status.Conditions, v1alpha1.ConditionReady)
	}
	require.Eventually(t, func() bool { r = ready(); return r != nil && r.Status == metav1.ConditionTrue }, 60*time.Second, 50*time.Millisecond,
		"team-a's policies impose nothing: %+v", r)
	require.NoError(t, c.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "rules", Namespace: "legate-system", Labels: map[string]string{controller.PolicyLabel: "true"}},
		Data:       map[string]string{"timeouts.cue": "cluster: connect_timeout: <=1\n"},
	}))
	require.Eventually(t, func() bool { r = ready(); return r != nil && r.Reason == readiness.ReasonValidationFailed }, 60*time.Second, 50*time.Millisecond,
		"the controller's own policy binds: %+v", r)

	var read int64
	for path, n := range reads.snapshot() {
		assert.True(t, strings.HasPrefix(path, "/api/v1/namespaces/legate-system/"), "the controller asked for the ConfigMaps of %s", path)
		read += n
	}
	assert.Less(t, read, int64(512<<10), "the controller read %d bytes of ConfigMaps; team-a's are 4.5 MiB", read)
}
