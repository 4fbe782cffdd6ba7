//go:build unix

package standalone

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/preview/prs"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/sds"
	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/test/gitea"
)

// A preview's render checks a secret reference by name and reads no key
// material: the secret's files are named pipes, which block whoever opens
// them for reading, so a preview that read them would never return.
// Applying the same render (what a commit on the served branch does) is
// what reads them; a preview never applies.
func TestPreviewReadsNoKeyMaterial(t *testing.T) {
	secrets := t.TempDir()
	dir := filepath.Join(secrets, "cfg", "edge-cert")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	for _, f := range []string{sds.TLSCertFile, sds.TLSKeyFile} {
		require.NoError(t, syscall.Mkfifo(filepath.Join(dir, f), 0o600))
	}
	s := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), SecretsDir: secrets, XDSInsecureSecrets: []string{"*"},
		Sources: []serveconfig.SourceConfig{{Name: "cfg", Git: &serveconfig.GitSource{URL: "/nowhere"}}},
	}, Options{})
	t.Cleanup(s.close)

	done := make(chan *render.Result, 1)
	go func() {
		done <- s.previewRender("cfg")(context.Background(), fstest.MapFS{"edge.yaml": {Data: []byte(marin3rTLS)}})
	}()
	var res *render.Result
	select {
	case res = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the preview's render blocked: it opened the secret's key material")
	}
	require.Empty(t, res.Diagnostics, "the reference is in the source's scope")
	require.Contains(t, res.Nodes, "edge")
	require.Len(t, res.Nodes["edge"].ExternalSecrets, 1)
	assert.Equal(t, "cfg/edge-cert", res.Nodes["edge"].ExternalSecrets[0].Ref, "checked and resolved by name")
}

// forkPullRequest makes user (created here) fork repo, push files on
// branch of the fork and open a pull request of it into base, as user. It
// returns the request and the head commit.
func forkPullRequest(t *testing.T, srv *gitea.Server, repo *gitea.Repository, user, branch, base string, files map[string]string) (gitea.PullRequest, string) {
	t.Helper()
	const password = "contributor-password-1"
	require.NoError(t, srv.API(http.MethodPost, "api/v1/admin/users", map[string]any{
		"username": user, "email": user + "@legate.test", "password": password, "must_change_password": false,
	}, nil))
	// sudo: the admin's token acts as user, so that the fork and the
	// request are user's own, as a contributor's are.
	var fork gitea.Repository
	require.NoError(t, srv.API(http.MethodPost, "api/v1/repos/"+repo.FullName+"/forks?sudo="+user, map[string]any{}, &fork))
	require.Equal(t, user+"/"+repo.Name, fork.FullName)
	u, err := url.Parse(fork.CloneURL)
	require.NoError(t, err)
	u.User = url.UserPassword(user, password)

	w := giteaWork{t: t, dir: t.TempDir(), push: u.String()}
	w.git("clone", "-q", u.String(), ".")
	w.git("checkout", "-q", "-b", branch)
	head := w.commit(branch, "from a fork", files)
	var pr gitea.PullRequest
	require.NoError(t, srv.API(http.MethodPost, "api/v1/repos/"+repo.FullName+"/pulls?sudo="+user, map[string]any{
		"head": user + ":" + branch, "base": base, "title": "from a fork",
	}, &pr))
	return pr, head
}

// TestForkPullRequestReadsNoKeyMaterial is issue 29's fork check on a
// real Gitea: a contributor forks the repository and opens a request
// whose new node references a TLS secret of the source. The secret's
// files are named pipes, which block whoever opens them for reading: the
// preview still gives its verdict, nobody holds them open afterwards, the
// reference is resolved by name, and the comment says that the request
// comes from a fork.
func TestForkPullRequestReadsNoKeyMaterial(t *testing.T) {
	srv := gitea.Start(t, gitea.Options{})
	repo := srv.CreateRepo("fork-previews")
	keyDir := filepath.Join(t.TempDir(), "cfg", "edge-cert")
	require.NoError(t, os.MkdirAll(keyDir, 0o700))
	var pipes []string
	for _, f := range []string{sds.TLSCertFile, sds.TLSKeyFile} {
		p := filepath.Join(keyDir, f)
		require.NoError(t, syscall.Mkfifo(p, 0o600))
		pipes = append(pipes, p)
	}
	// A failing run may leave a reader blocked on a pipe: a writer's open
	// and close releases it.
	t.Cleanup(func() {
		for _, p := range pipes {
			if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				_ = f.Close()
			}
		}
	})

	w := giteaWork{t: t, dir: t.TempDir(), push: srv.PushURL(repo)}
	w.git("init", "-q", "-b", "main")
	served := w.commit("main", "base", map[string]string{"nodes/west/clusters.yaml": previewClusters("1s", "api")})

	s := startPreviewServer(t, srv, repo, serveconfig.Config{
		StateDir: t.TempDir(), SecretsDir: filepath.Dir(filepath.Dir(keyDir)), XDSInsecureSecrets: []string{"*"},
	}, 1)
	before := previewFleet(s)

	pr, head := forkPullRequest(t, srv, repo, "contributor", "tls", "main", map[string]string{"edge.yaml": marin3rTLS})
	st := srv.WaitStatus(t, repo, head, prs.StatusContext, "success", time.Minute)
	assert.Equal(t, "valid; would change 1 node(s): edge", st.Description)
	var body string
	require.Eventually(t, func() bool {
		cs := legateComments(t, srv, repo, pr.Number)
		if len(cs) == 1 {
			body = cs[0].Body
		}
		return len(cs) == 1 && strings.Contains(body, head)
	}, time.Minute, 50*time.Millisecond)
	assert.Contains(t, body, prs.ForkNote)
	assert.Contains(t, body, "edge-cert", "the secret is shown by its name")

	// Nobody holds a pipe open for reading: a writer's non-blocking open
	// fails with ENXIO exactly when there is no reader.
	for _, p := range pipes {
		f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			_ = f.Close()
		}
		assert.ErrorIs(t, err, syscall.ENXIO, "%s was opened for reading: key material was read", p)
	}
	assert.Equal(t, before, previewFleet(s), "nothing was stored or published")
	assert.Equal(t, served, s.Sources()[0].Commit)
}
