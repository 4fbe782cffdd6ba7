package controller_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/forge/kubeforge"
	"github.com/legate-dev/legate/preview/kubepreview"
	"github.com/legate-dev/legate/preview/prs"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/sources/envoysource"
	gitsource "github.com/legate-dev/legate/sources/git"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/gitea"
	"github.com/legate-dev/legate/test/internal/ctltest"
	"github.com/legate-dev/legate/test/internal/gitrepo"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
)

// previewCluster is a STATIC cluster with a connect timeout of timeout.
func previewCluster(name, timeout string, port int) string {
	return strings.Replace(xdsyaml.StaticCluster(name, port), "connect_timeout: 1s", "connect_timeout: "+timeout, 1)
}

// markedComments are the comments of pull request n that carry marker.
func markedComments(t *testing.T, srv *gitea.Server, repo *gitea.Repository, n int64, marker string) []gitea.Comment {
	t.Helper()
	all, err := srv.Comments(repo, n)
	require.NoError(t, err)
	var out []gitea.Comment
	for _, c := range all {
		if strings.HasPrefix(c.Body, marker) {
			out = append(out, c)
		}
	}
	return out
}

// fleetOf is every stored revision (name and content hash): what the
// cluster serves and has served.
func fleetOf(t *testing.T, c client.Client) []string {
	t.Helper()
	var revs v1alpha1.EnvoyConfigRevisionList
	require.NoError(t, c.List(context.Background(), &revs))
	var out []string
	for _, r := range revs.Items {
		out = append(out, r.Namespace+"/"+r.Name)
	}
	slices.Sort(out)
	return out
}

// An EnvoySource of kind git with a Gitea forge and spec.previews: the
// controller finds its pull requests by polling Gitea, posts the
// legate/preview status on each head and one comment edited in place on
// every push, refuses a node another namespace serves exactly as a commit
// would be (naming nothing of the other tenant), removes a closed
// request's work area, and never moves the served fleet.
func TestEnvoySourcePullRequestPreviews(t *testing.T) {
	t.Parallel()
	srv := gitea.Start(t, gitea.Options{})
	repo := srv.CreateRepo("team-b-envoy")
	cluster := envtest.Start(t)
	c := ctltest.Client(t, cluster.Config)
	stateDir := t.TempDir()
	startWith(t, cluster.Config, func(o *controller.Options) { o.StateDir = stateDir })
	ctx := context.Background()
	createNamespaces(t, c, "team-a", "team-b")
	const wait = 90 * time.Second

	// Namespace team-a serves node shared-edge.
	ecA := envoyConfig(t, "shared-edge", previewCluster("a-private-upstream", "7s", 9999))
	ecA.Namespace, ecA.Name = "team-a", "edge"
	require.NoError(t, c.Create(ctx, ecA))
	require.Eventually(t, func() bool {
		var got v1alpha1.EnvoyConfig
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(ecA), &got))
		return got.Status.PublishedVersion != nil
	}, wait, 50*time.Millisecond, "team-a's node is published")

	// Namespace team-b follows a repository on Gitea that serves b-edge.
	w := gitrepo.New(t, "Author", "author@example.com")
	base := w.Commit("base", map[string]string{"nodes/b-edge/clusters.yaml": previewCluster("api", "1s", 8080)})
	w.Git("push", "-q", srv.PushURL(repo), "main")
	require.NoError(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea-auth", Namespace: "team-b"},
		Data:       map[string][]byte{"username": []byte(gitea.AdminUser), "password": []byte(srv.Token)},
	}))
	require.NoError(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea-token", Namespace: "team-b"},
		Data:       map[string][]byte{kubeforge.TokenKey: []byte(srv.Token)},
	}))
	es := &v1alpha1.EnvoySource{
		ObjectMeta: metav1.ObjectMeta{Name: "config", Namespace: "team-b"},
		Spec: v1alpha1.EnvoySourceSpec{
			Git:          &v1alpha1.GitSource{URL: repo.CloneURL, Ref: &v1alpha1.GitRef{Branch: "main"}, SecretRef: &v1alpha1.LocalObjectReference{Name: "gitea-auth"}},
			Interval:     metav1.Duration{Duration: envoysource.MinInterval},
			CommitStatus: &v1alpha1.CommitStatus{Provider: "gitea", TokenSecretRef: v1alpha1.LocalObjectReference{Name: "gitea-token"}},
			Previews:     &v1alpha1.Previews{Enabled: true},
		},
	}
	require.NoError(t, c.Create(ctx, es))
	key := client.ObjectKeyFromObject(es)
	name := sources.EnvoySourceRef("team-b", "config").String()
	marker := prs.Marker(name)
	require.Eventually(t, func() bool {
		return getSource(t, c, key).Status.LastAppliedRevision == "main@sha1:"+base
	}, wait, 50*time.Millisecond, "team-b's base commit is applied")
	before := fleetOf(t, c)
	areas := func() []int64 {
		got, err := prs.GitFetcher{Source: gitsource.Config{Name: name}, Root: kubepreview.WorkRoot(stateDir)}.WorkAreas()
		require.NoError(t, err)
		return got
	}

	// A pull request that changes b-edge: success, one comment, and the
	// request in status.previews.
	w.Git("checkout", "-q", "-b", "slower")
	h1 := w.Commit("slower", map[string]string{"nodes/b-edge/clusters.yaml": previewCluster("api", "2s", 8080)})
	w.Git("push", "-q", srv.PushURL(repo), "slower")
	opened := time.Now()
	pr := srv.OpenPullRequest(repo, "slower", "main", "slower connect")
	st := srv.WaitStatus(t, repo, h1, prs.StatusContext, "success", wait)
	// A figure for docs/benchmarks.md, not a check: polling at the
	// source's interval (5 s here) bounds it.
	t.Logf("pull request opened -> legate/preview success on its head: %s", time.Since(opened).Round(time.Millisecond))
	assert.Equal(t, "valid; would change 1 node(s): b-edge", st.Description)
	var comment gitea.Comment
	require.Eventually(t, func() bool {
		cs := markedComments(t, srv, repo, pr.Number, marker)
		if len(cs) == 1 {
			comment = cs[0]
		}
		return len(cs) == 1 && strings.Contains(cs[0].Body, h1)
	}, wait, 50*time.Millisecond, "one comment for the head")
	assert.Contains(t, comment.Body, "<code>b-edge</code>")
	assert.Contains(t, comment.Body, "connect_timeout")
	assert.NotContains(t, comment.Body, srv.Token)
	require.Eventually(t, func() bool {
		p := getSource(t, c, key).Status.Previews
		return p != nil && len(p.Open) == 1 && p.Open[0].Number == pr.Number && p.Open[0].Head == h1
	}, wait, 50*time.Millisecond, "status.previews lists the request and its head")

	// A second push: the status on the new head, the same comment edited.
	h2 := w.Commit("slower still", map[string]string{"nodes/b-edge/clusters.yaml": previewCluster("api", "3s", 8080)})
	pushed := time.Now()
	w.Git("push", "-q", srv.PushURL(repo), "slower")
	srv.WaitStatus(t, repo, h2, prs.StatusContext, "success", wait)
	t.Logf("second push -> legate/preview success on the new head: %s", time.Since(pushed).Round(time.Millisecond))
	require.Eventually(t, func() bool {
		cs := markedComments(t, srv, repo, pr.Number, marker)
		return len(cs) == 1 && strings.Contains(cs[0].Body, h2)
	}, wait, 50*time.Millisecond, "the comment is edited for the new head")
	assert.Equal(t, comment.ID, markedComments(t, srv, repo, pr.Number, marker)[0].ID, "the same comment, edited in place")

	// A request that configures team-a's node: refused as a commit would
	// be, and nothing of team-a's configuration or proxies shows.
	w.Git("checkout", "-q", "main")
	w.Git("checkout", "-q", "-b", "take")
	h3 := w.Commit("take shared-edge", map[string]string{"nodes/shared-edge/clusters.yaml": previewCluster("mine", "1s", 8081)})
	w.Git("push", "-q", srv.PushURL(repo), "take")
	take := srv.OpenPullRequest(repo, "take", "main", "take a node")
	st = srv.WaitStatus(t, repo, h3, prs.StatusContext, "failure", wait)
	assert.Contains(t, st.Description, `node "shared-edge" belongs to another namespace`)
	var refused string
	require.Eventually(t, func() bool {
		cs := markedComments(t, srv, repo, take.Number, marker)
		if len(cs) == 1 {
			refused = cs[0].Body
		}
		return len(cs) == 1 && strings.Contains(cs[0].Body, h3)
	}, wait, 50*time.Millisecond)
	// The comment is HTML: the quotes of the message are escaped.
	assert.Contains(t, refused, `node &quot;shared-edge&quot; belongs to another namespace; a node ID is configured from one namespace only`)
	for _, secret := range []string{"team-a", "a-private-upstream", "7s", "9999", "EnvoyConfig"} {
		assert.NotContains(t, refused, secret, "nothing of the other tenant")
	}

	// Closed: its work area goes, the open one keeps its own.
	require.Eventually(t, func() bool { a := areas(); return slices.Contains(a, pr.Number) && slices.Contains(a, take.Number) }, wait, 50*time.Millisecond)
	srv.ClosePullRequest(repo, pr.Number)
	require.Eventually(t, func() bool { return !slices.Contains(areas(), pr.Number) }, wait, 50*time.Millisecond, "the closed request's work area is removed")
	assert.Contains(t, areas(), take.Number)
	require.Eventually(t, func() bool {
		p := getSource(t, c, key).Status.Previews
		return p != nil && len(p.Open) == 1 && p.Open[0].Number == take.Number
	}, wait, 50*time.Millisecond, "status.previews drops the closed request")

	// The served fleet never moved.
	assert.Equal(t, before, fleetOf(t, c), "no revision was stored")
	assert.Equal(t, "main@sha1:"+base, getSource(t, c, key).Status.LastAppliedRevision)
	for _, s := range srv.Statuses(t, repo, base) {
		assert.NotEqual(t, prs.StatusContext, s.Context, "the served commit got no preview status")
	}
}
