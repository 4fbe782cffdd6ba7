package forge

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/test/gitea"
)

type giteaStatus struct {
	State       string `json:"status"`
	Context     string `json:"context"`
	Description string `json:"description"`
	TargetURL   string `json:"target_url"`
}

// pushCommit pushes one commit to repo and returns its SHA.
func pushCommit(t *testing.T, srv *gitea.Server, repo *gitea.Repository) string {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	run("init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "listeners.yaml"), []byte("listeners: []\n"), 0o600))
	run("add", "-A")
	run("-c", "user.name=Ada", "-c", "user.email=ada@example.com", "commit", "-q", "-m", "config")
	run("push", "-q", srv.PushURL(repo), "main")
	return run("rev-parse", "HEAD")
}

func giteaStatuses(t *testing.T, srv *gitea.Server, repo *gitea.Repository, sha string) []giteaStatus {
	t.Helper()
	var out []giteaStatus
	require.NoError(t, srv.API(http.MethodGet, "api/v1/repos/"+repo.FullName+"/commits/"+sha+"/statuses?sort=oldest", nil, &out))
	return out
}

// TestGiteaStatusesThroughOutage posts real commit statuses to a real Gitea,
// keeps them in the outbox while Gitea is down and delivers them in order
// once it is back.
func TestGiteaStatusesThroughOutage(t *testing.T) {
	srv := gitea.Start(t, gitea.Options{})
	repo := srv.CreateRepo("statuses")
	sha := pushCommit(t, srv, repo)
	tokFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokFile, []byte(srv.Token+"\n"), 0o600))

	rep, err := NewGitea(Config{BaseURL: srv.URL, Repository: repo.FullName, Token: SecretToken(sources.Secret{File: tokFile})})
	require.NoError(t, err)
	clock := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	d := NewDispatcher(NewMemOutbox(), map[string]Reporter{"cfg": rep}, DispatcherOptions{Clock: clock})
	ctx := context.Background()

	require.NoError(t, d.Enqueue(ctx, "cfg", Status{Commit: sha, State: StatePending, Context: ContextFor("edge"), Description: "published, waiting for 2 proxies", TargetURL: "http://127.0.0.1:8080/api/v1/nodes"}))
	_, err = d.Flush(ctx)
	require.NoError(t, err)
	got := giteaStatuses(t, srv, repo, sha)
	require.Len(t, got, 1)
	assert.Equal(t, giteaStatus{"pending", "legate/edge", "published, waiting for 2 proxies", "http://127.0.0.1:8080/api/v1/nodes"}, got[0])

	srv.Stop()
	failure := "rolled back: proxy edge-0 rejected it: cluster backend: unsupported type; token " + srv.Token
	require.NoError(t, d.Enqueue(ctx, "cfg", Status{Commit: sha, State: StateFailure, Context: ContextFor("edge"), Description: failure}))
	require.NoError(t, d.Enqueue(ctx, "cfg", Status{Commit: sha, State: StateSuccess, Context: ContextFor("other")}))
	next, err := d.Flush(ctx)
	require.NoError(t, err)
	require.False(t, next.IsZero(), "a retry is scheduled while Gitea is down")

	srv.Start()
	clock.Step(time.Hour)
	next, err = d.Flush(ctx)
	require.NoError(t, err)
	assert.True(t, next.IsZero())
	got = giteaStatuses(t, srv, repo, sha)
	require.Len(t, got, 3)
	assert.Equal(t, "failure", got[1].State)
	assert.Equal(t, "legate/edge", got[1].Context)
	assert.Contains(t, got[1].Description, "rolled back: proxy edge-0 rejected it: cluster backend: unsupported type")
	assert.NotContains(t, got[1].Description, srv.Token)
	assert.Equal(t, "success", got[2].State)
	assert.Equal(t, "legate/other", got[2].Context)
}
