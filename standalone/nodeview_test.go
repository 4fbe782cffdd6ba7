package standalone

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/pipeline/nodestate"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/statuspage"
)

// writeNode writes node's cluster file (nodes/<node>/cluster.yaml) naming
// cluster backend-<name>.
func (r *localRepo) writeNode(node, name string) {
	r.t.Helper()
	dir := filepath.Join(r.dir, "nodes", node)
	require.NoError(r.t, os.MkdirAll(dir, 0o700))
	require.NoError(r.t, os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(strings.ReplaceAll(clusterDoc, "%s", name)), 0o600))
}

func (s *Server) view(t *testing.T, node string) (statuspage.NodeView, bool) {
	t.Helper()
	for _, n := range s.Nodes() {
		if n.NodeID == node {
			return n, true
		}
	}
	return statuspage.NodeView{}, false
}

func post(t *testing.T, s *Server, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+s.HTTPAddr()+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// TestOrphanedNodeIsMarkedAndPruned deletes a node's files: the node keeps
// being served, marked orphaned, until it is pruned; then its proxy gets
// an empty configuration and the node is gone from the API. A node a
// source renders is not pruned.
func TestOrphanedNodeIsMarkedAndPruned(t *testing.T) {
	repo := newLocalRepo(t)
	repo.writeNode("edge", "a")
	repo.writeNode("gone", "g")
	repo.git("add", "-A")
	repo.git("commit", "-qm", "two nodes")
	s := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(),
		Sources:  []serveconfig.SourceConfig{{Name: "cfg", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}, Options{})
	runServer(t, s)
	require.Eventually(t, func() bool { return len(s.Nodes()) == 2 }, 30*time.Second, 10*time.Millisecond)
	proxy := startProxy(t, s.XDSAddr(), "gone", "pod-g", "nothing")
	require.Eventually(t, func() bool { _, n := proxy.last(); return n == 1 }, 30*time.Second, 10*time.Millisecond)
	v, _ := s.view(t, "gone")
	assert.False(t, v.Orphaned)

	repo.git("rm", "-rq", "nodes/gone")
	repo.git("commit", "-qm", "drop gone")
	require.True(t, s.Trigger("cfg"))
	require.Eventually(t, func() bool { v, _ := s.view(t, "gone"); return v.Orphaned }, 30*time.Second, 10*time.Millisecond)
	v, _ = s.view(t, "gone")
	assert.Contains(t, v.Summary, "orphaned: no source renders this node any more")
	assert.NotNil(t, v.Published, "an orphan keeps being served")
	edge, _ := s.view(t, "edge")
	assert.False(t, edge.Orphaned)

	code, body := post(t, s, "/api/v1/nodes/edge/prune")
	assert.Equal(t, http.StatusConflict, code, body)
	assert.Contains(t, body, "still rendered by a source")

	code, body = post(t, s, "/api/v1/nodes/gone/prune")
	require.Equal(t, http.StatusOK, code, body)
	require.Eventually(t, func() bool { _, n := proxy.last(); return n == 0 }, 30*time.Second, 10*time.Millisecond, "the proxy gets an empty configuration")
	// Its history is gone; its proxy, still connected, now asks for a node
	// ID that nothing configures.
	v, found := s.view(t, "gone")
	require.True(t, found)
	assert.Equal(t, nodestate.Unconfigured, v.State, "a pruned node is gone from the API, its proxy is not")
	assert.Empty(t, v.History)
	assert.Nil(t, v.Published)
	code, _ = post(t, s, "/api/v1/nodes/gone/prune")
	assert.Equal(t, http.StatusNotFound, code)
}

// TestRejectedCommitShowsOnSourceAndNode has a proxy reject a commit: the
// node rolls back, its newest attempt says the proxies rejected it, and the
// source says its applied commit was rejected.
func TestRejectedCommitShowsOnSourceAndNode(t *testing.T) {
	repo := newLocalRepo(t)
	repo.commit("a")
	s := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), DefaultNode: "edge",
		Sources: []serveconfig.SourceConfig{{Name: "cfg", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}, Options{})
	runServer(t, s)
	// The node is listed once its first revision is in its history; the
	// engine stores it before it records the publication, and a read in
	// between says the revision waits for proxies.
	require.Eventually(t, func() bool {
		v, ok := s.view(t, "edge")
		return ok && v.Attempt != nil && v.Attempt.Verdict == statuspage.VerdictNoProxy
	}, 30*time.Second, 10*time.Millisecond)
	v, _ := s.view(t, "edge")
	assert.Len(t, s.Nodes(), 1)
	assert.Contains(t, v.Summary, "no proxy of this node is connected")

	startProxy(t, s.XDSAddr(), "edge", "pod-1", "backend-b")
	require.Eventually(t, func() bool { v, _ := s.view(t, "edge"); return v.State == revisions.StateInSync }, 30*time.Second, 10*time.Millisecond)
	v, _ = s.view(t, "edge")
	assert.Equal(t, statuspage.VerdictServed, v.Attempt.Verdict)
	require.Len(t, v.Proxies, 1)
	assert.Equal(t, "pod-1", v.Proxies[0].Proxy)
	assert.Equal(t, "test-proxy 1.0", v.Proxies[0].UserAgent)
	assert.True(t, strings.HasPrefix(v.Proxies[0].Address, "127.0.0.1:"), v.Proxies[0].Address)
	assert.Empty(t, s.Sources()[0].Rejection)

	bad := repo.commit("b")
	require.True(t, s.Trigger("cfg"))
	require.Eventually(t, func() bool { v, _ := s.view(t, "edge"); return v.State == revisions.StateRollback }, 30*time.Second, 10*time.Millisecond)
	v, _ = s.view(t, "edge")
	assert.Equal(t, &statuspage.Attempt{
		Commit: bad, Revision: "main@sha1:" + bad, Source: "cfg", Hash: v.History[0].Hash, Verdict: statuspage.VerdictRejectedByProxies,
		Error: "rejected by 1 of 1 proxies; pod-1: cluster backend-b: unsupported by this proxy",
	}, v.Attempt)
	assert.Contains(t, v.Summary, "rolled back: the proxies rejected newer revisions, so the revision of commit")
	src := s.Sources()[0]
	assert.Equal(t, "commit "+bad[:12]+" rejected by proxies (rolled back): node edge: rejected by 1 of 1 proxies; pod-1: cluster backend-b: unsupported by this proxy", src.Rejection)

	require.NoError(t, os.WriteFile(filepath.Join(repo.dir, "cluster.yaml"), []byte("{ not yaml"), 0o600))
	repo.git("commit", "-qam", "broken")
	require.True(t, s.Trigger("cfg"))
	require.Eventually(t, func() bool {
		v, _ := s.view(t, "edge")
		return v.Attempt.Verdict == statuspage.VerdictRejectedValidation
	}, 30*time.Second, 10*time.Millisecond)
	v, _ = s.view(t, "edge")
	assert.Contains(t, v.Attempt.Error, "cluster.yaml:1")
	assert.Contains(t, v.Summary, "rejected by validation")
}
