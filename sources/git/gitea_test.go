package git

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/test/gitea"
)

// TestFetchPrivateRepositoryFromGitea fetches a private repository from a
// real Gitea over HTTP with an access token read from a file, and checks
// that a fetch without it fails without showing the token.
func TestFetchPrivateRepositoryFromGitea(t *testing.T) {
	srv := gitea.Start(t, gitea.Options{})
	var repo gitea.Repository
	require.NoError(t, srv.API(http.MethodPost, "api/v1/user/repos",
		map[string]any{"name": "private-cfg", "private": true, "default_branch": "main"}, &repo))

	local := newTestRepo(t)
	c1 := local.commit("first", map[string]string{"envoy/a.yaml": "a: 1"})
	local.git("push", "-q", srv.PushURL(&repo), "main")

	tokFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokFile, []byte(srv.Token), 0o600))
	src := mustNew(t, Config{URL: repo.CloneURL, Path: "envoy", Auth: Auth{Username: gitea.AdminUser, Password: sources.Secret{File: tokFile}}})
	res, err := src.Fetch(context.Background())
	require.NoError(t, err)
	assert.Equal(t, c1, res.Origin.Commit)
	assert.Equal(t, "main@sha1:"+c1, res.Origin.Revision())
	assert.Equal(t, "a: 1", readAll(t, res.Files)["a.yaml"])

	c2 := local.commit("second", map[string]string{"envoy/a.yaml": "a: 2"})
	local.git("push", "-q", srv.PushURL(&repo), "main")
	res, err = src.Fetch(context.Background())
	require.NoError(t, err)
	assert.True(t, res.Changed)
	assert.Equal(t, c2, res.Origin.Commit)

	_, err = mustNew(t, Config{URL: repo.CloneURL}).Fetch(context.Background())
	require.Error(t, err)
	assert.ErrorIs(t, err, transport.ErrAuthenticationRequired)

	_, err = mustNew(t, Config{URL: srv.PushURL(&repo) + "-missing"}).Fetch(context.Background())
	require.Error(t, err)
	assert.NotContains(t, err.Error(), srv.Token)
}

// TestPollAndFetchRequestsToGitea counts what a poll and a fetch ask of a
// real Gitea, through a reverse proxy that records every request: a poll
// of an unchanged repository is one ref listing, the fetch of a new commit
// one listing and one upload-pack.
func TestPollAndFetchRequestsToGitea(t *testing.T) {
	srv := gitea.Start(t, gitea.Options{})
	var repo gitea.Repository
	require.NoError(t, srv.API(http.MethodPost, "api/v1/user/repos",
		map[string]any{"name": "counted", "private": true, "default_branch": "main"}, &repo))
	local := newTestRepo(t)
	local.commit("first", map[string]string{"envoy/a.yaml": "a: 1"})
	local.git("push", "-q", srv.PushURL(&repo), "main")

	target, err := url.Parse(srv.URL)
	require.NoError(t, err)
	var mu sync.Mutex
	var seen []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+path.Base(r.URL.Path)+"?"+r.URL.RawQuery)
		mu.Unlock()
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	requests := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := seen
		seen = nil
		return out
	}
	clone, err := url.Parse(repo.CloneURL)
	require.NoError(t, err)

	tokFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokFile, []byte(srv.Token), 0o600))
	src := mustNew(t, Config{URL: proxy.URL + clone.Path, Path: "envoy", Auth: Auth{Username: gitea.AdminUser, Password: sources.Secret{File: tokFile}}})
	ctx := context.Background()
	_, err = src.Fetch(ctx)
	require.NoError(t, err)
	listing := "GET refs?service=git-upload-pack"
	uploadPack := "POST git-upload-pack?"
	assert.Equal(t, []string{listing, uploadPack}, requests(), "the first fetch clones")

	res, err := src.Fetch(ctx)
	require.NoError(t, err)
	assert.False(t, res.Changed)
	assert.Equal(t, []string{listing}, requests(), "a poll of an unchanged repository is one ref listing")

	c2 := local.commit("second", map[string]string{"envoy/a.yaml": "a: 2"})
	local.git("push", "-q", srv.PushURL(&repo), "main")
	res, err = src.Fetch(ctx)
	require.NoError(t, err)
	assert.True(t, res.Changed)
	assert.Equal(t, c2, res.Origin.Commit)
	assert.Equal(t, "a: 2", readAll(t, res.Files)["a.yaml"])
	assert.Equal(t, []string{listing, uploadPack}, requests(), "a fetch of one new commit is one listing and one upload-pack")

	// Three sources of the repository sharing a clone (a monorepo): a push
	// that triggers them together is one listing and one upload-pack.
	clones, state := NewClones(""), t.TempDir()
	var shared []*Source
	for i := range 3 {
		cfg := Config{Name: fmt.Sprintf("part-%d", i), URL: proxy.URL + clone.Path, Path: "envoy", StateDir: state, Clones: clones}
		cfg.Auth = Auth{Username: gitea.AdminUser, Password: sources.Secret{File: tokFile}}
		shared = append(shared, mustNew(t, cfg))
	}
	for _, s := range shared {
		_, err := s.Fetch(ctx)
		require.NoError(t, err)
	}
	assert.Equal(t, []string{listing, uploadPack, listing, listing}, requests(), "cloned once; the others list, one after the other")
	c3 := local.commit("third", map[string]string{"envoy/a.yaml": "a: 3"})
	local.git("push", "-q", srv.PushURL(&repo), "main")
	for s, res := range fetchTogether(t, shared...) {
		assert.Equal(t, c3, res.Origin.Commit, s.Name())
	}
	assert.Equal(t, []string{listing, uploadPack}, requests(), "three sources a push triggers: one listing and one upload-pack")
}
