package standalone

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/logging"
	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/sources/hooks"
)

const clusterDoc = `"@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
name: backend-%s
type: STATIC
connect_timeout: 1s
`

type localRepo struct {
	t   *testing.T
	dir string
}

func newLocalRepo(t *testing.T) *localRepo {
	r := &localRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	return r
}

// newServer makes a server of cfg whose listeners are on loopback ports
// of their own.
func newServer(t *testing.T, cfg serveconfig.Config, opts Options) *Server {
	t.Helper()
	cfg.XDSAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	s, err := New(cfg, opts)
	require.NoError(t, err)
	return s
}

// runServer runs s until the test ends, and then checks it stopped
// cleanly.
func runServer(t *testing.T, s *Server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

func (r *localRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@legate.invalid", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	require.NoError(r.t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

func (r *localRepo) commit(name string) string {
	r.t.Helper()
	require.NoError(r.t, os.WriteFile(filepath.Join(r.dir, "cluster.yaml"), []byte(strings.ReplaceAll(clusterDoc, "%s", name)), 0o600))
	r.git("add", "-A")
	r.git("commit", "-q", "-m", name)
	return r.git("rev-parse", "HEAD")
}

// TestWebhookTriggersTheWatchedSource runs a server whose only source
// polls once an hour: a signed push notice fetches it at once, an unsigned
// or wrongly signed one gets 401 and fetches nothing.
func TestWebhookTriggersTheWatchedSource(t *testing.T) {
	repo := newLocalRepo(t)
	first := repo.commit("a")
	secretFile := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secretFile, []byte("generic-secret-123\n"), 0o600))

	s := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), DefaultNode: "n",
		Sources:  []serveconfig.SourceConfig{{Name: "cfg", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
		Webhooks: serveconfig.WebhookConfig{Generic: sources.Secret{File: secretFile}},
	}, Options{})
	runServer(t, s)
	commit := func() string { return s.Sources()[0].Commit }
	require.Eventually(t, func() bool { return commit() == first }, 30*time.Second, 10*time.Millisecond)

	second := repo.commit("b")
	body := []byte(`{"url": "` + repo.dir + `", "ref": "refs/heads/main"}`)
	post := func(path, sig string) int {
		req, err := http.NewRequest(http.MethodPost, "http://"+s.HTTPAddr()+path, bytes.NewReader(body))
		require.NoError(t, err)
		if sig != "" {
			req.Header.Set(hooks.GenericSignatureHeader, sig)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	mac := hmac.New(sha256.New, []byte("generic-secret-123"))
	mac.Write(body)
	valid := "sha256=" + hex.EncodeToString(mac.Sum(nil))

	assert.Equal(t, http.StatusUnauthorized, post("/hooks/generic", ""))
	assert.Equal(t, http.StatusUnauthorized, post("/hooks/generic", "sha256=00"+valid[9:]))
	assert.Equal(t, http.StatusUnauthorized, post("/hooks/gitea", valid), "a provider without a secret refuses everything")
	assert.Equal(t, first, commit(), "refused deliveries trigger nothing")

	assert.Equal(t, http.StatusAccepted, post("/hooks/generic", valid))
	require.Eventually(t, func() bool { return commit() == second }, 30*time.Second, 10*time.Millisecond, "the signed push fetched the source")

	resp, err := http.Get("http://" + s.HTTPAddr() + "/healthz")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the status API is still served beside the hooks")
}

// TestGiteaPushMatchesOnAnyURLForm posts a Gitea push whose SSH URL names
// another host than the source (a Gitea SSH_DOMAIN) while its clone URL
// names the source: the source is fetched, once, and nothing is logged as
// an unknown repository.
func TestGiteaPushMatchesOnAnyURLForm(t *testing.T) {
	repo := newLocalRepo(t)
	first := repo.commit("a")
	secretFile := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secretFile, []byte("gitea-secret-123"), 0o600))
	var out syncBuffer
	log, err := logging.New(&out, "debug", "json")
	require.NoError(t, err)
	s := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), DefaultNode: "n",
		Sources:  []serveconfig.SourceConfig{{Name: "cfg", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
		Webhooks: serveconfig.WebhookConfig{Gitea: sources.Secret{File: secretFile}},
	}, Options{Log: log})
	runServer(t, s)
	commit := func() string { return s.Sources()[0].Commit }
	require.Eventually(t, func() bool { return commit() == first }, 30*time.Second, 10*time.Millisecond)

	second := repo.commit("b")
	body := []byte(`{"ref":"refs/heads/main","repository":{"clone_url":"` + repo.dir +
		`","ssh_url":"ssh://git@gitea.internal:2222/org/cfg.git","html_url":"http://gitea.internal:3000/org/cfg"}}`)
	mac := hmac.New(sha256.New, []byte("gitea-secret-123"))
	mac.Write(body)
	req, err := http.NewRequest(http.MethodPost, "http://"+s.HTTPAddr()+"/hooks/gitea", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("X-Gitea-Signature", hex.EncodeToString(mac.Sum(nil)))
	req.Header.Set("X-Gitea-Event", "push")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	require.Eventually(t, func() bool { return commit() == second }, 30*time.Second, 10*time.Millisecond, "the push fetched the source")

	logs := parseLogs(t, out.String())
	assert.Empty(t, levelOf(logs, "push webhook names no configured source"), "%s", out.String())
	assert.Equal(t, "DEBUG", levelOf(logs, "push webhook"), "the push is logged at debug verbosity: %s", out.String())
}

// Each provider's receiver checks deliveries with its own secret: a push
// signed with the provider's secret is accepted, the same push signed
// with another provider's secret is refused.
func TestEachProviderUsesItsOwnSecret(t *testing.T) {
	repo := newLocalRepo(t)
	repo.commit("a")
	dir := t.TempDir()
	secretOf := map[string]string{"gitea": "gitea-s3cret", "github": "github-s3cret", "gitlab": "gitlab-s3cret", "generic": "generic-s3cret"}
	file := func(provider string) sources.Secret {
		p := filepath.Join(dir, provider)
		require.NoError(t, os.WriteFile(p, []byte(secretOf[provider]), 0o600))
		return sources.Secret{File: p}
	}
	s := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), DefaultNode: "n",
		Sources:  []serveconfig.SourceConfig{{Name: "cfg", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
		Webhooks: serveconfig.WebhookConfig{Gitea: file("gitea"), GitHub: file("github"), GitLab: file("gitlab"), Generic: file("generic")},
	}, Options{})
	runServer(t, s)

	hubStyle := []byte(`{"ref":"refs/heads/main","repository":{"clone_url":"` + repo.dir + `"}}`)
	bodies := map[string][]byte{
		"gitea": hubStyle, "github": hubStyle,
		"gitlab":  []byte(`{"ref":"refs/heads/main","project":{"git_http_url":"` + repo.dir + `"}}`),
		"generic": []byte(`{"url":"` + repo.dir + `","ref":"refs/heads/main"}`),
	}
	sign := func(secret string, body []byte) string {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write(body)
		return hex.EncodeToString(m.Sum(nil))
	}
	post := func(provider, secret string) int {
		body := bodies[provider]
		req, err := http.NewRequest(http.MethodPost, "http://"+s.HTTPAddr()+"/hooks/"+provider, bytes.NewReader(body))
		require.NoError(t, err)
		switch provider {
		case "gitea":
			req.Header.Set("X-Gitea-Event", "push")
			req.Header.Set("X-Gitea-Signature", sign(secret, body))
		case "github":
			req.Header.Set("X-GitHub-Event", "push")
			req.Header.Set("X-Hub-Signature-256", "sha256="+sign(secret, body))
		case "gitlab":
			req.Header.Set("X-Gitlab-Event", "Push Hook")
			req.Header.Set("X-Gitlab-Token", secret)
		case "generic":
			req.Header.Set(hooks.GenericSignatureHeader, "sha256="+sign(secret, body))
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	for provider := range secretOf {
		for other, secret := range secretOf {
			want := http.StatusUnauthorized
			if other == provider {
				want = http.StatusAccepted
			}
			assert.Equal(t, want, post(provider, secret), "/hooks/%s signed with the %s secret", provider, other)
		}
	}
}
