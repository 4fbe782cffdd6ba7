package forge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/sources"
)

const (
	token = "forge-Token-0123456789abcdef"
	sha   = "0123456789abcdef0123456789abcdef01234567"
)

// forgeRequest is what a fake forge API received.
type forgeRequest struct {
	Method, Path, RawPath, Auth, PrivateToken, ContentType string
	Body                                                   map[string]any
}

// forgeServer records requests and answers with code.
type forgeServer struct {
	URL  string
	mu   sync.Mutex
	reqs []forgeRequest
	code int
}

func startForge(t *testing.T, code int) *forgeServer {
	t.Helper()
	f := &forgeServer{code: code}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		f.mu.Lock()
		f.reqs = append(f.reqs, forgeRequest{
			Method: r.Method, Path: r.URL.Path, RawPath: r.URL.EscapedPath(), Auth: r.Header.Get("Authorization"),
			PrivateToken: r.Header.Get("PRIVATE-TOKEN"), ContentType: r.Header.Get("Content-Type"), Body: m,
		})
		code := f.code
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		if code >= 300 {
			_, _ = io.WriteString(w, `{"message":"nope"}`)
			return
		}
		_, _ = io.WriteString(w, `{"id":1}`)
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

func (f *forgeServer) setCode(c int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.code = c
}

func (f *forgeServer) requests() []forgeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]forgeRequest(nil), f.reqs...)
}

func tokenFile(t *testing.T) TokenFunc {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(p, []byte(token+"\n"), 0o600))
	return SecretToken(sources.Secret{File: p})
}

// longFailure names a file and line, and carries secrets that must not
// reach the forge.
var longFailure = "envoy/listeners.yaml:12:3: route_config.virtual_hosts[0]: cluster \"backend\" not found; " +
	"auth was " + token + " and -----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY----- " +
	strings.Repeat("more detail ", 40)

func TestReporters(t *testing.T) {
	st := Status{Commit: sha, State: StateFailure, Context: ContextFor("edge-1"), Description: longFailure, TargetURL: "http://legate.example/nodes/edge-1"}
	tests := []struct {
		name      string
		provider  Provider
		repo      string
		base      func(url string) string
		limit     int
		wantPath  string
		wantRaw   string
		wantAuth  func(forgeRequest) string
		wantState string
		wantError string // StateError's word on the forge
		ctxField  string
	}{
		{
			name: "github", provider: ProviderGitHub, repo: "org/cfg", base: func(u string) string { return u + "/api/v3/" },
			limit: GitHubDescriptionLimit, wantPath: "/api/v3/repos/org/cfg/statuses/" + sha,
			wantAuth: func(r forgeRequest) string { return r.Auth }, wantState: "failure", wantError: "error", ctxField: "context",
		},
		{
			name: "gitlab", provider: ProviderGitLab, repo: "group/sub/cfg", base: func(u string) string { return u },
			limit: GitLabDescriptionLimit, wantPath: "/api/v4/projects/group/sub/cfg/statuses/" + sha,
			wantRaw:  "/api/v4/projects/group%2Fsub%2Fcfg/statuses/" + sha,
			wantAuth: func(r forgeRequest) string { return r.PrivateToken }, wantState: "failed", wantError: "canceled", ctxField: "name",
		},
		{
			name: "gitea", provider: ProviderGitea, repo: "org/cfg", base: func(u string) string { return u },
			limit: GiteaDescriptionLimit, wantPath: "/api/v1/repos/org/cfg/statuses/" + sha,
			wantAuth: func(r forgeRequest) string { return r.Auth }, wantState: "failure", wantError: "error", ctxField: "context",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startForge(t, http.StatusCreated)
			rep, err := New(tt.provider, Config{BaseURL: tt.base(srv.URL), Repository: tt.repo, Token: tokenFile(t)})
			require.NoError(t, err)
			require.NoError(t, rep.Post(context.Background(), st))

			reqs := srv.requests()
			require.Len(t, reqs, 1, "one request, no version probe")
			r := reqs[0]
			assert.Equal(t, http.MethodPost, r.Method)
			assert.Equal(t, tt.wantPath, r.Path)
			if tt.wantRaw != "" {
				assert.Equal(t, tt.wantRaw, r.RawPath)
			}
			assert.Contains(t, tt.wantAuth(r), token)
			assert.Contains(t, r.ContentType, "application/json")
			assert.Equal(t, tt.wantState, r.Body["state"])
			assert.Equal(t, "legate/edge-1", r.Body[tt.ctxField])
			assert.Equal(t, "http://legate.example/nodes/edge-1", r.Body["target_url"])
			desc, _ := r.Body["description"].(string)
			assert.True(t, strings.HasPrefix(desc, `envoy/listeners.yaml:12:3: route_config.virtual_hosts[0]: cluster "backend" not found`), desc)
			assert.LessOrEqual(t, utf8.RuneCountInString(desc), tt.limit)
			assert.True(t, strings.HasSuffix(desc, "…"))
			assert.NotContains(t, desc, token)
			assert.NotContains(t, desc, "MIIE")

			// A check legate could not finish (a superseded preview).
			errored := st
			errored.State = StateError
			require.NoError(t, rep.Post(context.Background(), errored))
			reqs = srv.requests()
			require.Len(t, reqs, 2)
			assert.Equal(t, tt.wantError, reqs[1].Body["state"])

			srv.setCode(http.StatusInternalServerError)
			err = rep.Post(context.Background(), st)
			require.Error(t, err)
			assert.False(t, IsPermanent(err), err.Error())
			assert.NotContains(t, err.Error(), token)

			srv.setCode(http.StatusUnprocessableEntity)
			err = rep.Post(context.Background(), st)
			require.Error(t, err)
			assert.True(t, IsPermanent(err), err.Error())
			assert.NotContains(t, err.Error(), token)
		})
	}
}

func TestReporterValidation(t *testing.T) {
	srv := startForge(t, http.StatusCreated)
	rep, err := NewGitHub(Config{BaseURL: srv.URL, Repository: "org/cfg", Token: tokenFile(t)})
	require.NoError(t, err)
	err = rep.Post(context.Background(), Status{Commit: sha, State: "cancelled", Context: "legate/x"})
	assert.True(t, IsPermanent(err))
	assert.Empty(t, srv.requests())

	_, err = NewGitHub(Config{Repository: "just-a-name"})
	require.Error(t, err)
	// url.Parse quotes what it could not parse, password and all.
	_, err = NewGitHub(Config{BaseURL: "https://bob:hunter2pw@github.example/%zz", Repository: "org/cfg"})
	require.ErrorContains(t, err, "github reporter: base url")
	assert.NotContains(t, err.Error(), "hunter2pw")
	_, err = NewGitea(Config{Repository: "org/cfg"})
	require.Error(t, err)
	_, err = New("bitbucket", Config{})
	assert.Error(t, err)

	rep, err = NewGitHub(Config{BaseURL: srv.URL, Repository: "org/cfg", Token: SecretToken(sources.Secret{Env: "LEGATE_TEST_UNSET_TOKEN"})})
	require.NoError(t, err)
	err = rep.Post(context.Background(), Status{Commit: sha, State: StatePending, Context: "legate/x"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "LEGATE_TEST_UNSET_TOKEN")
}

func TestTrim(t *testing.T) {
	tests := []struct {
		in    string
		limit int
		want  string
	}{
		{"short", 140, "short"},
		{"abcdef", 4, "abc…"},
		{"ééééé", 3, "éé…"},
		{"abc", 3, "abc"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Trim(tt.in, tt.limit))
	}
}

func TestTrimKeepsWhatFits(t *testing.T) {
	assert.Equal(t, "abcd", Trim("abcd", 4), "exactly at the limit is kept whole")
	assert.Equal(t, "abc…", Trim("abcde", 4))
	assert.Equal(t, "héllo", Trim("héllo", 5), "the limit counts characters, not bytes")
	assert.Equal(t, "abcde", Trim("abcde", 0), "no limit")
}
