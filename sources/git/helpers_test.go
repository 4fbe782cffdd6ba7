package git

import (
	"bytes"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// testRepo is a real repository worked on with the git CLI.
type testRepo struct {
	t   testing.TB
	dir string
}

func newTestRepo(t testing.TB) *testRepo {
	t.Helper()
	r := &testRepo{t: t, dir: filepath.Join(t.TempDir(), "repo.git")}
	require.NoError(t, os.MkdirAll(r.dir, 0o750))
	r.git("init", "-q", "-b", "main")
	r.git("config", "user.name", "Ada Author")
	r.git("config", "user.email", "ada@example.com")
	r.git("config", "commit.gpgsign", "false")
	r.git("config", "tag.gpgsign", "false")
	return r
}

func (r *testRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+r.dir)
	out, err := cmd.CombinedOutput()
	require.NoError(r.t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// commit writes files (an empty content deletes the file) and commits them.
func (r *testRepo) commit(msg string, files map[string]string) string {
	r.t.Helper()
	for name, content := range files {
		p := filepath.Join(r.dir, filepath.FromSlash(name))
		if content == "" {
			require.NoError(r.t, os.Remove(p))
			continue
		}
		require.NoError(r.t, os.MkdirAll(filepath.Dir(p), 0o750))
		require.NoError(r.t, os.WriteFile(p, []byte(content), 0o600))
	}
	r.git("add", "-A")
	r.git("commit", "-q", "--allow-empty", "-m", msg)
	return r.git("rev-parse", "HEAD")
}

// gitHTTPServer serves the repositories under root with git's own
// http-backend (smart HTTP), behind an optional authorization check. It
// counts upload-pack POSTs, i.e. actual fetches.
type gitHTTPServer struct {
	URL     string
	fetches atomic.Int64
	sent    atomic.Int64 // response bytes
	// requests counts every request answered
	requests atomic.Int64
	haves    atomic.Int64 // "have" lines of the last upload-pack request
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func serveGitHTTP(t testing.TB, root string, authorized func(*http.Request) bool) *gitHTTPServer {
	t.Helper()
	execPath, err := exec.Command("git", "--exec-path").Output()
	require.NoError(t, err)
	backend := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1"},
	}
	s := &gitHTTPServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if authorized != nil && !authorized(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		s.requests.Add(1)
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			s.fetches.Add(1)
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			// Each have is a pkt-line: four hex digits of length, "have ".
			s.haves.Store(int64(bytes.Count(body, []byte("have "))))
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		backend.ServeHTTP(countingWriter{w, &s.sent}, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func mustNew(t testing.TB, cfg Config) *Source {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "test"
	}
	if cfg.StateDir == "" {
		cfg.StateDir = t.TempDir()
	}
	s, err := New(cfg)
	require.NoError(t, err)
	return s
}
