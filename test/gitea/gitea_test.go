package gitea

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHarnessPushAndReadBack proves the harness runs a real Gitea: a commit
// pushed over HTTP with the git CLI is read back through Gitea's API, and
// stopping leaves no process behind.
func TestHarnessPushAndReadBack(t *testing.T) {
	srv := Start(t, Options{})
	repo := srv.CreateRepo("config")
	require.Equal(t, "main", repo.DefaultBranch)

	work := t.TempDir()
	git(t, work, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(work, "README.md"), []byte("hello from legate\n"), 0o644))
	git(t, work, "add", "README.md")
	git(t, work, "-c", "user.name=Legate Test", "-c", "user.email=test@legate.test", "commit", "-q", "-m", "first commit")
	sha := strings.TrimSpace(git(t, work, "rev-parse", "HEAD"))
	git(t, work, "push", "-q", srv.PushURL(repo), "main")

	var commit struct {
		SHA    string `json:"sha"`
		Commit struct {
			Message string `json:"message"`
			Author  struct {
				Name string `json:"name"`
			} `json:"author"`
		} `json:"commit"`
	}
	require.NoError(t, srv.API(http.MethodGet, "api/v1/repos/"+repo.FullName+"/git/commits/"+sha, nil, &commit))
	assert.Equal(t, sha, commit.SHA)
	assert.Equal(t, "first commit", strings.TrimSpace(commit.Commit.Message))
	assert.Equal(t, "Legate Test", commit.Commit.Author.Name)

	err := srv.API(http.MethodGet, "api/v1/repos/"+repo.FullName+"/git/commits/"+strings.Repeat("0", 40), nil, nil)
	assert.True(t, IsNotFound(err), "an unknown commit is a 404, got %v", err)

	// Stop, and check that the process group is gone.
	pid := srv.Pid()
	require.NotZero(t, pid)
	srv.Stop()
	assert.False(t, srv.Running())
	assert.ErrorIs(t, syscall.Kill(-pid, 0), syscall.ESRCH, "gitea's process group outlived Stop")

	// The data survives a restart.
	srv.Start()
	require.NoError(t, srv.API(http.MethodGet, "api/v1/repos/"+repo.FullName+"/git/commits/"+sha, nil, &commit))
	assert.Equal(t, sha, commit.SHA)
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// A port another process takes between freePort and Gitea's bind (the
// tests start API servers and proxies beside Gitea) does not fail the
// test: Gitea, which logs the bind error and never serves, is stopped and
// started on another port.
func TestStartMovesOffATakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = taken.Close() })
	takenPort := taken.Addr().(*net.TCPAddr).Port
	real := freePort
	handed := false
	freePort = func() (int, error) {
		if !handed {
			handed = true
			return takenPort, nil
		}
		return real()
	}
	t.Cleanup(func() { freePort = real })

	srv := Start(t, Options{})
	assert.True(t, handed, "Start was handed the taken port")
	assert.NotContains(t, srv.URL, ":"+strconv.Itoa(takenPort)+"/")
	var version struct {
		Version string `json:"version"`
	}
	require.NoError(t, srv.API(http.MethodGet, "api/v1/version", nil, &version))
	assert.NotEmpty(t, version.Version)
}
