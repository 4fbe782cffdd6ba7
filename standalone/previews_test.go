package standalone

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/preview/prs"
	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/test/gitea"
)

// previewClusters is a filesystem-xDS file of clusters with timeout.
func previewClusters(timeout string, names ...string) string {
	var b strings.Builder
	b.WriteString("resources:\n")
	for _, n := range names {
		fmt.Fprintf(&b, `- "@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
  name: %s
  type: STATIC
  connect_timeout: %s
  load_assignment:
    cluster_name: %s
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 8080}}}
`, n, timeout, n)
	}
	return b.String()
}

// previewListener routes / to cluster.
func previewListener(cluster string) string {
	return `resources:
- "@type": type.googleapis.com/envoy.config.listener.v3.Listener
  name: http
  address: {socket_address: {address: 127.0.0.1, port_value: 10000}}
  filter_chains:
  - filters:
    - name: envoy.filters.network.http_connection_manager
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
        stat_prefix: http
        route_config:
          virtual_hosts:
          - name: all
            domains: ["*"]
            routes:
            - match: {prefix: /}
              route: {cluster: ` + cluster + `}
        http_filters:
        - name: envoy.filters.http.router
          typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
`
}

// giteaWork is a work tree pushing to a Gitea repository.
type giteaWork struct {
	t    testing.TB
	dir  string
	push string
}

func (w giteaWork) git(args ...string) string {
	w.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=Ada", "-c", "user.email=ada@legate.invalid", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = w.dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+w.dir)
	out, err := cmd.CombinedOutput()
	require.NoError(w.t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// commit writes files (path -> content) on the current branch, commits,
// pushes it and returns the commit.
func (w giteaWork) commit(branch, msg string, files map[string]string) string {
	w.t.Helper()
	for p, content := range files {
		full := filepath.Join(w.dir, filepath.FromSlash(p))
		require.NoError(w.t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(w.t, os.WriteFile(full, []byte(content), 0o600))
	}
	w.git("add", "-A")
	w.git("commit", "-q", "-m", msg)
	w.git("push", "-q", "-f", w.push, "HEAD:refs/heads/"+branch)
	return w.git("rev-parse", "HEAD")
}

// previewFleet is the engine's served state: per node, its published
// version and hash, and the number of revisions it keeps.
func previewFleet(s *Server) map[string]string {
	out := map[string]string{}
	for _, n := range s.engine.Nodes() {
		v := "none"
		if n.Published != nil {
			v = n.Published.Version + "/" + n.Published.Hash + "/" + n.Published.Commit
		}
		out[n.NodeID] = v + " revisions=" + strconv.Itoa(len(n.History))
	}
	return out
}

func legateComments(t testing.TB, srv *gitea.Server, repo *gitea.Repository, n int64) []gitea.Comment {
	t.Helper()
	all, err := srv.Comments(repo, n)
	require.NoError(t, err)
	var out []gitea.Comment
	for _, c := range all {
		if strings.HasPrefix(c.Body, prs.Marker("cfg")) {
			out = append(out, c)
		}
	}
	return out
}

// startPreviewServer runs a server on cfg with one source, "cfg", that
// follows repo's main branch with previews and Gitea commit statuses (the
// admin's token), waits until its first commit gave it that many nodes,
// and subscribes it to repo's pull-request webhook with its secret.
func startPreviewServer(t *testing.T, srv *gitea.Server, repo *gitea.Repository, cfg serveconfig.Config, nodes int) *Server {
	t.Helper()
	secrets := t.TempDir()
	tokenFile := filepath.Join(secrets, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(srv.Token+"\n"), 0o600))
	const hookSecret = "preview-hook-secret-0123"
	hookFile := filepath.Join(secrets, "hook")
	require.NoError(t, os.WriteFile(hookFile, []byte(hookSecret), 0o600))
	cfg.Sources = []serveconfig.SourceConfig{{
		Name: "cfg", Interval: serveconfig.Duration{Duration: time.Hour},
		Git:      &serveconfig.GitSource{URL: repo.CloneURL, Branch: "main", Auth: &serveconfig.GitAuth{Username: gitea.AdminUser, Password: sources.Secret{File: tokenFile}}},
		Forge:    &serveconfig.ForgeConfig{Provider: forge.ProviderGitea, Token: sources.Secret{File: tokenFile}},
		Previews: &serveconfig.PreviewsConfig{Enabled: true},
	}}
	cfg.Webhooks = serveconfig.WebhookConfig{Gitea: sources.Secret{File: hookFile}}
	s := newServer(t, cfg, Options{})
	runServer(t, s)
	require.Eventually(t, func() bool { return s.Sources()[0].AppliedRevision != "" && len(s.engine.Nodes()) == nodes }, time.Minute, 20*time.Millisecond)
	require.NoError(t, srv.API(http.MethodPost, "api/v1/repos/"+repo.FullName+"/hooks", map[string]any{
		"type": "gitea", "active": true, "events": []string{"pull_request"},
		"config": map[string]string{"url": "http://" + s.HTTPAddr() + "/hooks/gitea", "content_type": "json", "secret": hookSecret},
	}, nil))
	return s
}

// TestPullRequestPreviewsOnGitea is the reviewer's loop on a real Gitea:
// pull requests reach legate through the signed webhook, each gets the
// legate/preview status on its head and one comment edited in place, a
// closed one loses its work area, and the served fleet never moves.
func TestPullRequestPreviewsOnGitea(t *testing.T) {
	srv := gitea.Start(t, gitea.Options{})
	repo := srv.CreateRepo("previews")

	w := giteaWork{t: t, dir: t.TempDir(), push: srv.PushURL(repo)}
	w.git("init", "-q", "-b", "main")
	base := map[string]string{
		"nodes/edge/clusters.yaml": previewClusters("1s", "api"),
		"nodes/edge/listener.yaml": previewListener("api"),
		"nodes/west/clusters.yaml": previewClusters("1s", "api"),
		"nodes/east/clusters.yaml": previewClusters("1s", "api"),
	}
	served := w.commit("main", "base", base)

	stateDir := t.TempDir()
	s := startPreviewServer(t, srv, repo, serveconfig.Config{StateDir: stateDir}, 3)
	require.Equal(t, served, s.Sources()[0].Commit)
	before := previewFleet(s)
	const wait = time.Minute

	// Two nodes change: success, one comment naming exactly them.
	w.git("checkout", "-q", "-b", "two-nodes")
	h1 := w.commit("two-nodes", "edge and west", map[string]string{
		"nodes/edge/clusters.yaml": previewClusters("2s", "api"),
		"nodes/west/clusters.yaml": previewClusters("1s", "api", "extra"),
	})
	pr := srv.OpenPullRequest(repo, "two-nodes", "main", "two nodes")
	st := srv.WaitStatus(t, repo, h1, prs.StatusContext, "success", wait)
	assert.Equal(t, "valid; would change 2 node(s): edge, west", st.Description)
	var comment gitea.Comment
	require.Eventually(t, func() bool {
		cs := legateComments(t, srv, repo, pr.Number)
		if len(cs) == 1 {
			comment = cs[0]
		}
		return len(cs) == 1 && strings.Contains(cs[0].Body, h1)
	}, wait, 50*time.Millisecond)
	for _, want := range []string{"<code>edge</code>", "<code>west</code>", "extra", "connect_timeout"} {
		assert.Contains(t, comment.Body, want)
	}
	assert.NotContains(t, comment.Body, "<code>east</code>", "an unchanged node is not listed")
	assert.NotContains(t, comment.Body, srv.Token)

	// A second push: the status on the new head, the same comment edited.
	h2 := w.commit("two-nodes", "west only", map[string]string{"nodes/edge/clusters.yaml": previewClusters("1s", "api")})
	st = srv.WaitStatus(t, repo, h2, prs.StatusContext, "success", wait)
	assert.Equal(t, "valid; would change 1 node(s): west", st.Description)
	require.Eventually(t, func() bool {
		cs := legateComments(t, srv, repo, pr.Number)
		return len(cs) == 1 && strings.Contains(cs[0].Body, h2)
	}, wait, 50*time.Millisecond, "the comment is edited for the new head")
	cs := legateComments(t, srv, repo, pr.Number)
	assert.Equal(t, comment.ID, cs[0].ID, "the same comment, edited in place")
	assert.NotContains(t, cs[0].Body, "<code>edge</code>")

	// A broken route: failure with file:line, the comment says why.
	w.git("checkout", "-q", "main")
	w.git("checkout", "-q", "-b", "broken")
	h3 := w.commit("broken", "route to nowhere", map[string]string{"nodes/edge/listener.yaml": previewListener("missing")})
	broken := srv.OpenPullRequest(repo, "broken", "main", "broken route")
	st = srv.WaitStatus(t, repo, h3, prs.StatusContext, "failure", wait)
	assert.Contains(t, st.Description, "nodes/edge/listener.yaml:")
	assert.Contains(t, st.Description, "missing")
	require.Eventually(t, func() bool {
		cs := legateComments(t, srv, repo, broken.Number)
		return len(cs) == 1 && strings.Contains(cs[0].Body, "nodes/edge/listener.yaml:")
	}, wait, 50*time.Millisecond)

	// Two pushes in quick succession: the newest head gets the verdict,
	// the older one's check is not left pending, and the request still
	// has one comment.
	h4 := w.commit("broken", "route to api", map[string]string{"nodes/edge/listener.yaml": previewListener("api")})
	h5 := w.commit("broken", "route to api, east changed", map[string]string{"nodes/east/clusters.yaml": previewClusters("3s", "api")})
	st = srv.WaitStatus(t, repo, h5, prs.StatusContext, "success", wait)
	assert.Equal(t, "valid; would change 1 node(s): east", st.Description)
	require.Eventually(t, func() bool {
		old := srv.LatestStatus(repo, h4, prs.StatusContext)
		return old.State != "pending" // none (never started) or closed
	}, wait, 50*time.Millisecond, "the superseded head's check is not left pending")
	if old := srv.LatestStatus(repo, h4, prs.StatusContext); old.State == "error" {
		assert.Equal(t, "superseded by "+h5[:12]+": not previewed, the newer head is", old.Description)
	}
	require.Eventually(t, func() bool {
		cs := legateComments(t, srv, repo, broken.Number)
		return len(cs) == 1 && strings.Contains(cs[0].Body, h5)
	}, wait, 50*time.Millisecond, "one comment, edited for the newest head")

	// Closed: its work area goes.
	area := filepath.Join(stateDir, "previews", "cfg", strconv.FormatInt(pr.Number, 10))
	require.DirExists(t, area)
	srv.ClosePullRequest(repo, pr.Number)
	require.Eventually(t, func() bool { _, err := os.Stat(area); return os.IsNotExist(err) }, wait, 50*time.Millisecond, "the closed request's work area is removed")
	assert.DirExists(t, filepath.Join(stateDir, "previews", "cfg", strconv.FormatInt(broken.Number, 10)), "the open one keeps its own")

	// Reopened: previewed again (its work area back, a new verdict on its
	// head), and still one comment.
	// The verdict equals the one already on the head and legate's queue
	// replaces a pending status not yet sent by it, so the list of the
	// head's statuses need not grow (it did not, here): the work area
	// fetched again is the sign.
	require.NoError(t, srv.API(http.MethodPatch, fmt.Sprintf("api/v1/repos/%s/pulls/%d", repo.FullName, pr.Number), map[string]any{"state": "open"}, nil))
	require.Eventually(t, func() bool { _, err := os.Stat(area); return err == nil }, wait, 50*time.Millisecond, "the reopened request is previewed again: its work area is back")
	srv.WaitStatus(t, repo, h2, prs.StatusContext, "success", wait)
	cs = legateComments(t, srv, repo, pr.Number)
	require.Len(t, cs, 1)
	assert.Equal(t, comment.ID, cs[0].ID)

	assert.Equal(t, before, previewFleet(s), "nothing was stored or published")
	assert.Equal(t, served, s.Sources()[0].Commit)
	for _, st := range srv.Statuses(t, repo, served) {
		assert.NotEqual(t, prs.StatusContext, st.Context, "the served commit got no preview status")
	}
}
