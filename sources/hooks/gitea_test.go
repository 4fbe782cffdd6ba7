package hooks

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/test/gitea"
)

// TestGiteaDeliversSignedPushes sends real pushes to a real Gitea and
// checks that its webhook reaches the handler, passes the signature check
// and triggers the watched source, while a hook with another secret is
// refused.
func TestGiteaDeliversSignedPushes(t *testing.T) {
	srv := gitea.Start(t, gitea.Options{ExtraConfig: "[webhook]\nALLOWED_HOST_LIST = loopback\nDELIVER_TIMEOUT = 5\n"})
	repo := srv.CreateRepo("hooked")

	var fetches, others atomic.Int64
	var w Watcher
	w.Watch(repo.CloneURL, func() { fetches.Add(1) })
	w.Watch(strings.TrimSuffix(repo.CloneURL, ".git")+"-other.git", func() { others.Add(1) })
	mux := http.NewServeMux()
	Register(mux, Secrets{Gitea: []byte("right-secret")}, w.AsTrigger())
	var refused atomic.Int64
	legate := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: rw}
		mux.ServeHTTP(rec, r)
		if rec.code == http.StatusUnauthorized {
			refused.Add(1)
		}
	}))
	t.Cleanup(legate.Close)

	for _, secret := range []string{"right-secret", "wrong-secret"} {
		body := map[string]any{
			"type":   "gitea",
			"active": true,
			"events": []string{"push"},
			"config": map[string]string{"url": legate.URL + "/hooks/gitea", "content_type": "json", "secret": secret},
		}
		require.NoError(t, srv.API(http.MethodPost, "api/v1/repos/"+repo.FullName+"/hooks", body, nil))
	}

	dir := t.TempDir()
	run := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	run("init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("a: 1\n"), 0o600))
	run("add", "-A")
	run("-c", "user.name=Ada", "-c", "user.email=ada@example.com", "commit", "-q", "-m", "one")
	run("push", "-q", srv.PushURL(repo), "main")

	require.Eventually(t, func() bool { return fetches.Load() >= 1 }, 30*time.Second, 50*time.Millisecond, "the signed push never triggered a fetch")

	require.Eventually(t, func() bool { return refused.Load() >= 1 }, 30*time.Second, 50*time.Millisecond, "the wrongly signed delivery was not refused")
	assert.EqualValues(t, 1, fetches.Load(), "exactly the signed delivery triggered")
	assert.Zero(t, others.Load(), "another repository is not fetched")
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}
