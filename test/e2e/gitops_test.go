package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/test/gitea"
)

// TestGitOpsWithGitea is the author's loop on a real Gitea: pushes reach
// legate through a signed webhook, and every commit ends with the commit
// status that says what happened to it, read back through Gitea's API.
func TestGitOpsWithGitea(t *testing.T) {
	srv := gitea.Start(t, gitea.Options{}) // the harness allows webhooks to loopback
	repo := srv.CreateRepo("envoy-config")
	a, b := startBackend(t, "a"), startBackend(t, "b")

	secrets := t.TempDir()
	tokenFile := filepath.Join(secrets, "gitea-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(srv.Token+"\n"), 0o600))
	hookSecret := "hook-secret-0123456789"
	hookFile := filepath.Join(secrets, "hook-secret")
	require.NoError(t, os.WriteFile(hookFile, []byte(hookSecret), 0o600))

	w := newGitopsWorktree(t)
	good := gitopsConfig{route: "a", portA: a.Port, portB: b.Port}
	c1 := w.Commit("route to a", good.files())
	w.Git("push", "-q", srv.PushURL(repo), "main")

	// Polling once an hour: every later commit arrives through the webhook.
	legate := startGitopsLegate(t,
		"--state-dir", t.TempDir(),
		"--answer-timeout", "2m",
		"--source", "name=config,git="+repo.CloneURL+",branch=main,path=envoy,interval=1h,"+
			"username="+gitea.AdminUser+",password-file="+tokenFile+",forge=gitea,forge-token-file="+tokenFile,
		"--webhook-secret-file", "gitea="+hookFile,
		"--public-url", "http://legate.example:8080",
	)
	ctxName := "legate/" + gitopsNode
	require.NoError(t, srv.API(http.MethodPost, "api/v1/repos/"+repo.FullName+"/hooks", map[string]any{
		"type": "gitea", "active": true, "events": []string{"push"},
		"config": map[string]string{"url": "http://" + legate.httpAddr + "/hooks/gitea", "content_type": "json", "secret": hookSecret},
	}, nil))

	client := newGitopsClient(t, legate.xdsAddr)
	client.lands("a", "the first commit routes to a")
	st := gitopsWaitStatus(t, srv, repo, c1, ctxName, "success")
	assert.Contains(t, st.Description, "accepted by 1 of 1 proxies")
	assert.Equal(t, "http://legate.example:8080/api/v1/nodes/"+gitopsNode, st.TargetURL)

	t.Run("valid push: webhook, published, client runs it, success", func(t *testing.T) {
		good.route = "b"
		c2 := w.Commit("route to b", good.files())
		w.Git("push", "-q", srv.PushURL(repo), "main")
		client.lands("b", "the pushed commit routes to b")
		gitopsWaitStatus(t, srv, repo, c2, ctxName, "success")
		assert.Equal(t, c2, legate.publishedCommit(gitopsNode))
	})
	c2 := legate.publishedCommit(gitopsNode)

	t.Run("invalid push: failure with file and line, nothing published", func(t *testing.T) {
		bad := good
		bad.invalid = true
		c3 := w.Commit("add a field clusters do not have", bad.files())
		w.Git("push", "-q", srv.PushURL(repo), "main")
		st := gitopsWaitStatus(t, srv, repo, c3, ctxName, "failure")
		line := lineOf(t, bad.yaml(), "no_such_field")
		assert.Contains(t, st.Description, gitopsFile+":"+strconv.Itoa(line)+":", "the description names the file, from the repository root, and the line")
		assert.Contains(t, st.Description, "no_such_field")
		assert.Equal(t, c2, legate.publishedCommit(gitopsNode), "nothing new is published")
		assert.Equal(t, "b", client.call())

		c3b := w.Commit("docs only, the config stays invalid", map[string]string{"README.md": "invalid still\n"})
		w.Git("push", "-q", srv.PushURL(repo), "main")
		st = gitopsWaitStatus(t, srv, repo, c3b, ctxName, "failure")
		assert.Contains(t, st.Description, gitopsFile+":"+strconv.Itoa(line)+":", "a commit outside the path carries the same verdict")
		assert.Equal(t, c2, legate.publishedCommit(gitopsNode))
	})

	t.Run("push the client rejects: rollback, failure with the client's text", func(t *testing.T) {
		rejected := good
		rejected.staticB = true
		c4 := w.Commit("make b a STATIC cluster", rejected.files())
		w.Git("push", "-q", srv.PushURL(repo), "main")
		st := gitopsWaitStatus(t, srv, repo, c4, ctxName, "failure")
		assert.Contains(t, st.Description, "rolled back")
		assert.Contains(t, st.Description, "unsupported cluster type", "the description carries grpc-go's own error")
		require.Eventually(t, func() bool {
			v, ok := legate.node(gitopsNode)
			return ok && v.State == revisions.StateRollback && v.Published != nil && v.Published.Commit == c2
		}, gitopsWait, gitopsPoll, "the node rolls back to the last good commit")
		assert.Equal(t, "b", client.call())
	})

	t.Run("forge down: the status waits in the outbox and arrives", func(t *testing.T) {
		held := newGitopsHeldProxy(t, legate.xdsAddr)
		held.ack(held.next()) // the rolled-back routes

		good.route = "a"
		c5 := w.Commit("back to a", good.files())
		w.Git("push", "-q", srv.PushURL(repo), "main")
		resp := held.next() // the new routes, left unanswered for now
		client.lands("a", "the client runs the new commit")
		gitopsWaitStatus(t, srv, repo, c5, ctxName, "pending")

		srv.Stop()
		held.ack(resp)
		require.Eventually(t, func() bool {
			v, ok := legate.node(gitopsNode)
			return ok && v.State == revisions.StateInSync && v.Published != nil && v.Published.Commit == c5
		}, gitopsWait, gitopsPoll, "both proxies accepted the commit while Gitea is down")
		srv.Start()
		st := gitopsWaitStatus(t, srv, repo, c5, ctxName, "success")
		assert.Contains(t, st.Description, "accepted by 2 of 2 proxies")
	})

	t.Run("a commit outside the path moves the revision and gets its status", func(t *testing.T) {
		c6 := w.Commit("docs only", map[string]string{"README.md": "how to edit envoy/\n"})
		w.Git("push", "-q", srv.PushURL(repo), "main")
		st := gitopsWaitStatus(t, srv, repo, c6, ctxName, "success")
		assert.Contains(t, st.Description, "accepted by 1 of 1 proxies", "the held proxy is gone")
		require.Eventually(t, func() bool { return legate.publishedCommit(gitopsNode) == c6 }, gitopsWait, gitopsPoll)
	})

	t.Run("no secret in any status", func(t *testing.T) {
		for _, sha := range strings.Fields(w.Git("rev-list", "main")) {
			for _, s := range gitopsAllStatuses(t, srv, repo, sha) {
				t.Logf("%.12s %s %s: %s", sha, s.Context, s.State, s.Description)
				for _, field := range []string{s.Description, s.TargetURL, s.Context} {
					assert.NotContains(t, field, srv.Token)
					assert.NotContains(t, field, hookSecret)
					assert.NotContains(t, field, gitea.AdminPassword)
				}
			}
		}
	})
}
