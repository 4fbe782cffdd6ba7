package controller_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/forge/kubeforge"
	"github.com/legate-dev/legate/pipeline/readiness"
	"github.com/legate-dev/legate/revisions/kubestore"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/gitea"
	"github.com/legate-dev/legate/test/internal/backend"
	"github.com/legate-dev/legate/test/internal/ctltest"
	"github.com/legate-dev/legate/test/internal/gitrepo"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
)

// greeterFiles is a repository's envoy/ directory for the grpc-go client
// node: routes to cluster route, both backends defined.
func greeterFiles(route string, portA, portB int, extra ...string) map[string]string {
	return map[string]string{
		"envoy/legate.yaml": "nodeIDs: [grpc-client]\n",
		"envoy/greeter.yaml": xdsyaml.Join(append([]string{
			xdsyaml.APIListener("greeter", "greeter", "routes"),
			xdsyaml.RouteConfiguration("routes", "greeter", xdsyaml.Route{Cluster: route}),
			xdsyaml.EDSCluster("a"), xdsyaml.Endpoints("a", portA),
			xdsyaml.EDSCluster("b"), xdsyaml.Endpoints("b", portB),
		}, extra...)...),
	}
}

func getSource(t *testing.T, c client.Client, key client.ObjectKey) *v1alpha1.EnvoySource {
	t.Helper()
	var es v1alpha1.EnvoySource
	require.NoError(t, c.Get(context.Background(), key, &es))
	return &es
}

func readyOf(es *v1alpha1.EnvoySource) *metav1.Condition {
	return meta.FindStatusCondition(es.Status.Conditions, v1alpha1.ConditionReady)
}

// An EnvoySource that follows a repository on a real Gitea (credentials
// from a Secret, path "./envoy") is served to a real grpc-go client, with
// the commit SHA on the revision object and Flux's revision pair in its
// status; `flux reconcile`'s annotation fetches at once; an invalid commit
// is reported with file:line while the last good one stays served.
func TestEnvoySourceFollowsAGiteaRepository(t *testing.T) {
	t.Parallel()
	srv := gitea.Start(t, gitea.Options{})
	repo := srv.CreateRepo("envoy-config")
	c, ctl := run(t)
	ctx := context.Background()
	a, b := backend.Start(t, "a"), backend.Start(t, "b")

	w := gitrepo.New(t, "Author", "author@example.com")
	c1 := w.Commit("route to a", greeterFiles("a", a.Port, b.Port))
	w.Git("push", "-q", srv.PushURL(repo), "main")

	require.NoError(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea-auth", Namespace: "default"},
		Data:       map[string][]byte{"username": []byte(gitea.AdminUser), "password": []byte(srv.Token)},
	}))
	require.NoError(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea-token", Namespace: "default"},
		Data:       map[string][]byte{kubeforge.TokenKey: []byte(srv.Token)},
	}))
	es := &v1alpha1.EnvoySource{
		ObjectMeta: metav1.ObjectMeta{Name: "config", Namespace: "default"},
		Spec: v1alpha1.EnvoySourceSpec{
			Git:          &v1alpha1.GitSource{URL: repo.CloneURL, Ref: &v1alpha1.GitRef{Branch: "main"}, SecretRef: &v1alpha1.LocalObjectReference{Name: "gitea-auth"}},
			Path:         "./envoy",
			Interval:     metav1.Duration{Duration: time.Hour},
			CommitStatus: &v1alpha1.CommitStatus{Provider: "gitea", TokenSecretRef: v1alpha1.LocalObjectReference{Name: "gitea-token"}},
		},
	}
	require.NoError(t, c.Create(ctx, es))
	key := client.ObjectKeyFromObject(es)
	check := forge.ContextFor("grpc-client")

	grpcClient := backend.Dial(t, ctl.XDSAddr(), "grpc-client", "pod-1", "greeter")
	require.Eventually(t, func() bool { return grpcClient.Call() == "a" }, 90*time.Second, 50*time.Millisecond, "RPCs land on a")
	require.Eventually(t, func() bool {
		r := readyOf(getSource(t, c, key))
		return r != nil && r.Status == metav1.ConditionTrue
	}, 60*time.Second, 50*time.Millisecond, "the source is Ready once its node is served")
	got := getSource(t, c, key)
	assert.Equal(t, "main@sha1:"+c1, got.Status.LastAppliedRevision)
	assert.Equal(t, "main@sha1:"+c1, got.Status.LastAttemptedRevision)
	assert.Equal(t, []string{"grpc-client"}, got.Status.Nodes)
	assert.Equal(t, readiness.ReasonSucceeded, readyOf(got).Reason)
	assert.NotContains(t, readyOf(got).Message+strings.Join(got.Status.Diagnostics, ""), srv.Token, "no credential in a status")

	var revs v1alpha1.EnvoyConfigRevisionList
	require.NoError(t, c.List(ctx, &revs, client.InNamespace("legate-system")))
	require.Len(t, revs.Items, 1)
	require.NotNil(t, revs.Items[0].Status.Origin)
	assert.Equal(t, c1, revs.Items[0].Status.Origin.Commit, "the revision records the commit it came from")
	st := srv.WaitStatus(t, repo, c1, check, "success", 60*time.Second)
	assert.Contains(t, st.Description, "accepted by 1 of 1 proxies")

	// A new commit, fetched at once because `flux reconcile` asked (the
	// interval is an hour).
	c2 := w.Commit("route to b", greeterFiles("b", a.Port, b.Port))
	w.Git("push", "-q", srv.PushURL(repo), "main")
	requestReconcile(t, c, got, "2026-11-25T10:00:00Z")
	require.Eventually(t, func() bool { return grpcClient.Call() == "b" }, 60*time.Second, 50*time.Millisecond, "the requested reconcile serves the new commit")
	require.Eventually(t, func() bool {
		s := getSource(t, c, key).Status
		return s.LastHandledReconcileAt == "2026-11-25T10:00:00Z" && s.LastAppliedRevision == "main@sha1:"+c2
	}, 60*time.Second, 50*time.Millisecond, "the request is echoed and the commit applied")

	// An invalid commit: refused with the file and line, the last good
	// one stays served.
	c3 := w.Commit("a field clusters do not have", greeterFiles("b", a.Port, b.Port, xdsyaml.WithField(xdsyaml.EDSCluster("c"), "no_such_field", "1")))
	w.Git("push", "-q", srv.PushURL(repo), "main")
	requestReconcile(t, c, got, "2026-11-25T10:01:00Z")
	require.Eventually(t, func() bool {
		return getSource(t, c, key).Status.LastAttemptedRevision == "main@sha1:"+c3
	}, 60*time.Second, 50*time.Millisecond, "the invalid commit is attempted")
	got = getSource(t, c, key)
	assert.Equal(t, "main@sha1:"+c2, got.Status.LastAppliedRevision, "the applied revision trails the invalid one")
	ready := readyOf(got)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Equal(t, readiness.ReasonValidationFailed, ready.Reason)
	require.NotEmpty(t, got.Status.Diagnostics)
	assert.Contains(t, got.Status.Diagnostics[0], "envoy/greeter.yaml:")
	assert.Contains(t, got.Status.Diagnostics[0], "no_such_field")
	assert.Equal(t, "b", grpcClient.Call(), "the client keeps the last good configuration")
	st = srv.WaitStatus(t, repo, c3, check, "failure", 60*time.Second)
	assert.Contains(t, st.Description, "envoy/greeter.yaml:", "the failure names the file from the repository root")
	assert.NotContains(t, st.Description, srv.Token)
	srv.WaitStatus(t, repo, c2, check, "success", 60*time.Second)
}

// requestReconcile sets the annotation `flux reconcile` sets, as a merge
// patch of the annotation alone.
func requestReconcile(t *testing.T, c client.Client, obj client.Object, token string) {
	t.Helper()
	patch := []byte(`{"metadata":{"annotations":{"` + v1alpha1.ReconcileRequestAnnotation + `":"` + token + `"}}}`)
	require.NoError(t, c.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, patch)))
}

// artifactServer serves tarballs as source-controller does, one per path.
type artifactServer struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string][]byte
}

func newArtifactServer(t *testing.T) *artifactServer {
	s := &artifactServer{files: map[string][]byte{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		data, ok := s.files[r.URL.Path]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(s.Close)
	return s
}

// put serves files as a tar.gz at path and returns its URL and digest.
func (s *artifactServer) put(t *testing.T, path string, files map[string]string) (url, digest string) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	names := slices.Sorted(maps.Keys(files))
	for _, name := range names {
		body := files[name]
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	sum := sha256.Sum256(buf.Bytes())
	s.mu.Lock()
	s.files[path] = buf.Bytes()
	s.mu.Unlock()
	return s.URL + path, "sha256:" + hex.EncodeToString(sum[:])
}

// createGitRepository creates the Flux GitRepository ns/name following
// the main branch of url, as a user applies one (source-controller does
// not run here: setArtifact plays its part).
func createGitRepository(t *testing.T, c client.Client, ns, name, url string) *unstructured.Unstructured {
	t.Helper()
	repo := &unstructured.Unstructured{}
	repo.SetAPIVersion("source.toolkit.fluxcd.io/v1")
	repo.SetKind("GitRepository")
	repo.SetNamespace(ns)
	repo.SetName(name)
	require.NoError(t, unstructured.SetNestedMap(repo.Object, map[string]any{
		"url": url, "interval": "1m", "ref": map[string]any{"branch": "main"},
	}, "spec"))
	require.NoError(t, c.Create(context.Background(), repo))
	return repo
}

// setArtifact writes a GitRepository's status.artifact as source-controller
// does.
func setArtifact(t *testing.T, c client.Client, repo *unstructured.Unstructured, url, digest, revision string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(repo), repo))
	require.NoError(t, unstructured.SetNestedMap(repo.Object, map[string]any{
		"url": url, "digest": digest, "revision": revision,
		"path":           "gitrepository/default/envoy/" + revision[len(revision)-40:] + ".tar.gz",
		"lastUpdateTime": time.Now().UTC().Format(time.RFC3339),
	}, "status", "artifact"))
	require.NoError(t, c.Status().Update(ctx, repo))
}

// An EnvoySource whose sourceRef names a Flux GitRepository (Flux's own
// CRDs, from the pinned source-controller module) serves the artifact
// source-controller published, verified against its digest: a new
// artifact is served as soon as the GitRepository's status moves, and an
// artifact that does not match its digest is refused naming both digests,
// while the client keeps the last verified configuration.
func TestEnvoySourceServesAFluxArtifact(t *testing.T) {
	t.Parallel()
	cluster := envtest.Start(t, envtest.FluxCRDs(t))
	c := ctltest.Client(t, cluster.Config)
	ctl := start(t, cluster.Config)
	ctx := context.Background()
	a, b := backend.Start(t, "a"), backend.Start(t, "b")
	arts := newArtifactServer(t)

	repo := createGitRepository(t, c, "default", "envoy", "https://git.example/team/envoy-config")
	sha1 := strings.Repeat("1", 40)
	url, digest := arts.put(t, "/gitrepository/default/envoy/"+sha1+".tar.gz", greeterFiles("a", a.Port, b.Port))
	setArtifact(t, c, repo, url, digest, "main@sha1:"+sha1)

	es := &v1alpha1.EnvoySource{
		ObjectMeta: metav1.ObjectMeta{Name: "from-flux", Namespace: "default"},
		Spec: v1alpha1.EnvoySourceSpec{
			SourceRef: &v1alpha1.FluxSourceRef{Kind: "GitRepository", Name: "envoy"},
			Path:      "./envoy",
			Interval:  metav1.Duration{Duration: time.Hour},
		},
	}
	require.NoError(t, c.Create(ctx, es))
	key := client.ObjectKeyFromObject(es)
	grpcClient := backend.Dial(t, ctl.XDSAddr(), "grpc-client", "pod-1", "greeter")
	require.Eventually(t, func() bool { return grpcClient.Call() == "a" }, 60*time.Second, 50*time.Millisecond, "the artifact is served")
	require.Eventually(t, func() bool {
		r := readyOf(getSource(t, c, key))
		return r != nil && r.Status == metav1.ConditionTrue
	}, 60*time.Second, 50*time.Millisecond)
	got := getSource(t, c, key)
	assert.Equal(t, "main@sha1:"+sha1, got.Status.LastAppliedRevision)
	assert.Equal(t, digest, got.Status.ArtifactDigest)
	var revs v1alpha1.EnvoyConfigRevisionList
	require.NoError(t, c.List(ctx, &revs, client.InNamespace("legate-system")))
	require.Len(t, revs.Items, 1)
	assert.Equal(t, sha1, revs.Items[0].Status.Origin.Commit, "the commit of the artifact's revision")
	assert.Equal(t, kubestore.RevisionName("grpc-client", revs.Items[0].Spec.Hash), revs.Items[0].Name)

	// source-controller publishes a new artifact: served without waiting
	// for the hour-long interval (legate watches the GitRepository).
	sha2 := strings.Repeat("2", 40)
	url, digest2 := arts.put(t, "/gitrepository/default/envoy/"+sha2+".tar.gz", greeterFiles("b", a.Port, b.Port))
	setArtifact(t, c, repo, url, digest2, "main@sha1:"+sha2)
	require.Eventually(t, func() bool { return grpcClient.Call() == "b" }, 60*time.Second, 50*time.Millisecond, "the new artifact is served")

	// An artifact whose bytes are not what the digest says.
	sha3 := strings.Repeat("3", 40)
	url, _ = arts.put(t, "/gitrepository/default/envoy/"+sha3+".tar.gz", greeterFiles("a", a.Port, b.Port))
	claimed := "sha256:" + strings.Repeat("0", 64)
	setArtifact(t, c, repo, url, claimed, "main@sha1:"+sha3)
	var ready *metav1.Condition
	require.Eventually(t, func() bool {
		ready = readyOf(getSource(t, c, key))
		return ready != nil && ready.Reason == readiness.ReasonDigestMismatch
	}, 60*time.Second, 50*time.Millisecond, "the tampered artifact is refused")
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Contains(t, ready.Message, claimed, "the digest the object claims")
	_, served := arts.put(t, "/gitrepository/default/envoy/"+sha3+".tar.gz", greeterFiles("a", a.Port, b.Port))
	assert.Contains(t, ready.Message, served, "the digest of what was downloaded")
	got = getSource(t, c, key)
	assert.Equal(t, "main@sha1:"+sha2, got.Status.LastAppliedRevision, "the last verified artifact stays applied")
	for range 10 {
		require.Equal(t, "b", grpcClient.Call(), "the client keeps the last verified configuration")
	}
}
