package hooks

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) trigger(urls []string, ref string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, strings.Join(urls, ",")+" "+ref)
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

var (
	secret = []byte("hook-secret-value")
	wrong  = []byte("another-secret")

	giteaPush = []byte(`{"ref":"refs/heads/main","after":"abc","repository":{"full_name":"org/cfg",` +
		`"clone_url":"http://127.0.0.1:3000/org/cfg.git","ssh_url":"ssh://git@127.0.0.1:2222/org/cfg.git","html_url":"http://127.0.0.1:3000/org/cfg"}}`)
	githubPush = []byte(`{"ref":"refs/tags/v1.2.0","repository":{"clone_url":"https://github.com/org/cfg.git",` +
		`"ssh_url":"git@github.com:org/cfg.git","git_url":"git://github.com/org/cfg.git","html_url":"https://github.com/org/cfg"}}`)
	gitlabPush = []byte(`{"object_kind":"push","ref":"refs/heads/main","project":{"git_http_url":"https://gitlab.example/group/cfg.git",` +
		`"git_ssh_url":"git@gitlab.example:group/cfg.git","web_url":"https://gitlab.example/group/cfg"},` +
		`"repository":{"git_http_url":"https://gitlab.example/group/cfg.git","git_ssh_url":"git@gitlab.example:group/cfg.git"}}`)
	genericPush = []byte(`{"url":"oci://registry.example/cfg/edge","ref":"latest"}`)
)

func TestWebhooks(t *testing.T) {
	type request struct {
		path    string
		headers map[string]string
		body    []byte
	}
	giteaReq := func(key []byte, event string) request {
		return request{"/hooks/gitea", map[string]string{"X-Gitea-Signature": sign(key, giteaPush), "X-Gitea-Event": event}, giteaPush}
	}
	githubReq := func(key []byte, event string) request {
		return request{"/hooks/github", map[string]string{"X-Hub-Signature-256": "sha256=" + sign(key, githubPush), "X-GitHub-Event": event}, githubPush}
	}
	gitlabReq := func(token, event string) request {
		return request{"/hooks/gitlab", map[string]string{"X-Gitlab-Token": token, "X-Gitlab-Event": event}, gitlabPush}
	}
	genericReq := func(key []byte, body []byte) request {
		return request{"/hooks/generic", map[string]string{GenericSignatureHeader: "sha256=" + sign(key, body)}, body}
	}
	tests := []struct {
		name      string
		req       request
		wantCode  int
		wantCalls []string
	}{
		{"gitea push", giteaReq(secret, "push"), http.StatusAccepted, []string{"http://127.0.0.1:3000/org/cfg.git,ssh://git@127.0.0.1:2222/org/cfg.git,http://127.0.0.1:3000/org/cfg refs/heads/main"}},
		{"gitea wrong secret", giteaReq(wrong, "push"), http.StatusUnauthorized, nil},
		{"gitea unsigned", request{"/hooks/gitea", map[string]string{"X-Gitea-Event": "push"}, giteaPush}, http.StatusUnauthorized, nil},
		{"gitea other event", giteaReq(secret, "issues"), http.StatusNoContent, nil},
		{"github push", githubReq(secret, "push"), http.StatusAccepted, []string{"https://github.com/org/cfg.git,git@github.com:org/cfg.git,git://github.com/org/cfg.git,https://github.com/org/cfg refs/tags/v1.2.0"}},
		{"github wrong secret", githubReq(wrong, "push"), http.StatusUnauthorized, nil},
		{"github bare hex", request{"/hooks/github", map[string]string{"X-Hub-Signature-256": sign(secret, githubPush), "X-GitHub-Event": "push"}, githubPush}, http.StatusUnauthorized, nil},
		{"github ping", githubReq(secret, "ping"), http.StatusNoContent, nil},
		{"gitlab push", gitlabReq(string(secret), "Push Hook"), http.StatusAccepted, []string{"https://gitlab.example/group/cfg.git,git@gitlab.example:group/cfg.git,https://gitlab.example/group/cfg refs/heads/main"}},
		{"gitlab wrong token", gitlabReq(string(wrong), "Push Hook"), http.StatusUnauthorized, nil},
		{"gitlab no token", gitlabReq("", "Push Hook"), http.StatusUnauthorized, nil},
		{"gitlab merge request", gitlabReq(string(secret), "Merge Request Hook"), http.StatusNoContent, nil},
		{"generic", genericReq(secret, genericPush), http.StatusAccepted, []string{"oci://registry.example/cfg/edge latest"}},
		{"generic wrong secret", genericReq(wrong, genericPush), http.StatusUnauthorized, nil},
		{"generic signed garbage", genericReq(secret, []byte("{not json")), http.StatusBadRequest, nil},
		{"generic without url", genericReq(secret, []byte(`{"ref":"main"}`)), http.StatusBadRequest, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			mux := http.NewServeMux()
			Register(mux, Secrets{Gitea: secret, GitHub: secret, GitLab: secret, Generic: secret}, rec.trigger)
			srv := httptest.NewServer(mux)
			t.Cleanup(srv.Close)

			req, err := http.NewRequest(http.MethodPost, srv.URL+tt.req.path, bytes.NewReader(tt.req.body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			for k, v := range tt.req.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
			assert.Equal(t, tt.wantCode, resp.StatusCode)
			assert.Equal(t, tt.wantCalls, rec.got())
		})
	}
}

func TestWebhooksWithoutSecretRejectEverything(t *testing.T) {
	rec := &recorder{}
	mux := http.NewServeMux()
	Register(mux, Secrets{}, rec.trigger)
	for path, hdr := range map[string][2]string{
		"/hooks/gitea":   {"X-Gitea-Signature", sign(nil, giteaPush)},
		"/hooks/github":  {"X-Hub-Signature-256", "sha256=" + sign(nil, giteaPush)},
		"/hooks/gitlab":  {"X-Gitlab-Token", ""},
		"/hooks/generic": {GenericSignatureHeader, "sha256=" + sign(nil, giteaPush)},
	} {
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(giteaPush))
		req.Header.Set(hdr[0], hdr[1])
		req.Header.Set("X-Gitea-Event", "push")
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-Gitlab-Event", "Push Hook")
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		assert.Equal(t, http.StatusUnauthorized, w.Code, path)
	}
	assert.Empty(t, rec.got())

	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/hooks/github", nil))
	assert.Equal(t, http.StatusMethodNotAllowed, w.Code)

	big := bytes.Repeat([]byte("x"), MaxBodyBytes+1)
	w = httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/hooks/github", bytes.NewReader(big)))
	assert.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
}

func TestWatcher(t *testing.T) {
	var w Watcher
	var main, other int
	w.Watch("https://bot:tok@Git.Example/org/cfg.git", func() { main++ })
	w.Watch("https://git.example/org/other", func() { other++ })

	assert.Equal(t, 1, w.Trigger("http://git.example:3000/org/cfg", "refs/heads/main"))
	assert.Equal(t, 1, w.Trigger("git@git.example:org/cfg.git", "refs/tags/v1"))
	assert.Equal(t, 1, w.Trigger("ssh://git@git.example:2222/org/cfg.git/", ""))
	assert.Equal(t, 0, w.Trigger("https://git.example/org/cfg2.git", ""))
	w.AsTrigger()([]string{"https://git.example/org/other.git"}, "refs/heads/main")
	assert.Equal(t, 3, main)
	assert.Equal(t, 1, other)

	// A Gitea whose SSH domain is another name than its HTTP host: the
	// push matches through its clone URL, once.
	assert.Equal(t, 1, w.TriggerAny([]string{"ssh://git@gitea.internal:2222/org/cfg.git", "https://git.example/org/cfg.git", "https://git.example/org/cfg"}, "refs/heads/main"))
	assert.Equal(t, 4, main)
	assert.Equal(t, 0, w.TriggerAny([]string{"ssh://git@gitea.internal/org/cfg.git"}, ""))
}

func TestSameRepository(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"https://github.com/org/cfg.git", "git@github.com:org/cfg.git", true},
		{"https://github.com/org/cfg", "https://github.com/org/cfg.git/", true},
		{"oci://registry.example/cfg/edge", "oci://registry.example/cfg/edge", true},
		{"/srv/repos/cfg", "/srv/repos/cfg.git", true},
		{"https://github.com/org/cfg", "https://github.com/org/cfg-two", false},
		{"https://github.com/org/cfg", "https://gitlab.com/org/cfg", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, SameRepository(tt.a, tt.b), "%s vs %s", tt.a, tt.b)
	}
}
