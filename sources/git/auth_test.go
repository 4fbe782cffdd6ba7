package git

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/sources"
)

const (
	goodToken = "tok-Secret-0123456789"
	badToken  = "tok-Wrong-9876543210"
)

func servedRepo(t *testing.T, authorized func(*http.Request) bool) string {
	t.Helper()
	root := t.TempDir()
	repo := newTestRepo(t)
	repo.commit("one", map[string]string{"a.yaml": "1"})
	repo.git("clone", "-q", "--bare", repo.dir, filepath.Join(root, "cfg.git"))
	return serveGitHTTP(t, root, authorized).URL + "/cfg.git"
}

func writeSecret(t *testing.T, value string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(p, []byte(value+"\n"), 0o600))
	return p
}

func TestHTTPAuth(t *testing.T) {
	basicURL := servedRepo(t, func(r *http.Request) bool {
		u, p, ok := r.BasicAuth()
		return ok && u == "bot" && p == goodToken
	})
	bearerURL := servedRepo(t, func(r *http.Request) bool {
		return r.Header.Get("Authorization") == "Bearer "+goodToken
	})
	t.Setenv("LEGATE_TEST_GOOD", goodToken)
	t.Setenv("LEGATE_TEST_BAD", badToken)
	withUser := func(u, user, pass string) string {
		return strings.Replace(u, "http://", "http://"+user+":"+pass+"@", 1)
	}

	tests := []struct {
		name    string
		url     string
		auth    Auth
		secret  string
		wantErr bool
	}{
		{"token in url", withUser(basicURL, "bot", goodToken), Auth{}, goodToken, false},
		{"wrong token in url", withUser(basicURL, "bot", badToken), Auth{}, badToken, true},
		{"password file", basicURL, Auth{Username: "bot", Password: sources.Secret{File: writeSecret(t, goodToken)}}, goodToken, false},
		{"wrong password file", basicURL, Auth{Username: "bot", Password: sources.Secret{File: writeSecret(t, badToken)}}, badToken, true},
		{"bearer env", bearerURL, Auth{BearerToken: sources.Secret{Env: "LEGATE_TEST_GOOD"}}, goodToken, false},
		{"wrong bearer env", bearerURL, Auth{BearerToken: sources.Secret{Env: "LEGATE_TEST_BAD"}}, badToken, true},
		{"anonymous", basicURL, Auth{}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := mustNew(t, Config{URL: tt.url, Auth: tt.auth})
			assert.NotContains(t, src.URL(), goodToken)
			assert.NotContains(t, src.URL(), badToken)
			res, err := src.Fetch(context.Background())
			if !tt.wantErr {
				require.NoError(t, err)
				assert.NotContains(t, res.Origin.URL, tt.secret)
				assert.Equal(t, "1", readAll(t, res.Files)["a.yaml"])
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, transport.ErrAuthenticationRequired)
			assert.NotContains(t, err.Error(), goodToken)
			assert.NotContains(t, err.Error(), badToken)
		})
	}
}

func TestCredentialErrorsNeverShowTheSecret(t *testing.T) {
	// A server that is not there: the transport error names the URL.
	srv := httptest.NewServer(http.NotFoundHandler())
	dead := srv.URL
	srv.Close()
	src := mustNew(t, Config{URL: strings.Replace(dead, "http://", "http://bot:"+goodToken+"@", 1) + "/cfg.git"})
	_, err := src.Fetch(context.Background())
	require.Error(t, err)
	assert.NotContains(t, err.Error(), goodToken)
	assert.Contains(t, err.Error(), strings.TrimPrefix(dead, "http://"), "the error still says which server")

	// A key file that is not a key.
	_, err = mustNew(t, Config{URL: "ssh://git@127.0.0.1:1/r.git", Auth: Auth{
		SSHKey: sources.Secret{File: writeSecret(t, goodToken)}, KnownHosts: writeSecret(t, ""),
	}}).Fetch(context.Background())
	require.Error(t, err)
	assert.NotContains(t, err.Error(), goodToken)

	// A missing credential file names the file.
	_, err = mustNew(t, Config{URL: dead + "/x.git", Auth: Auth{Password: sources.Secret{File: "/nonexistent/token"}}}).Fetch(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/nonexistent/token")
}

func TestFetchTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	src := mustNew(t, Config{URL: srv.URL + "/slow.git", Timeout: 100 * time.Millisecond})
	_, err := src.Fetch(context.Background())
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "fetch timeout"), err.Error())
	assert.Contains(t, err.Error(), "timeout")
}
