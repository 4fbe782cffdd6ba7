package git

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
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
