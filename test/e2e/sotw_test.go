package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/statuspage"
	"github.com/legate-dev/legate/xds"
)

const (
	clusterType = "envoy.config.cluster.v3.Cluster"
	// grpcRejection is the text grpc-go NACKs a STATIC cluster with.
	grpcRejection = "unsupported cluster type (STATIC, <nil>)"
)

var (
	clusterNACKs     = fmt.Sprintf(`legate_xds_nacks_total{type=%q}`, clusterType)
	clusterResponses = fmt.Sprintf(`legate_xds_responses_total{type=%q}`, clusterType)
)

// inSyncOn: the node serves commit sha and every connected proxy accepted it.
func inSyncOn(sha string, proxies int) func(statuspage.NodeView) bool {
	return func(n statuspage.NodeView) bool {
		return n.State == revisions.StateInSync && n.Published != nil && n.Published.Commit == sha &&
			n.Answers == revisions.AnswerCounts{Connected: proxies, Accepted: proxies} && len(n.Proxies) == proxies
	}
}

// typeStatus returns the status of one type of one proxy's stream.
func typeStatus(t *testing.T, n statuspage.NodeView, proxy, typeURL string) xds.TypeStatus {
	t.Helper()
	for _, p := range n.Proxies {
		if p.Proxy != proxy {
			continue
		}
		for _, ts := range p.Types {
			if ts.TypeURL == typeURL {
				return ts
			}
		}
	}
	require.FailNow(t, "no such proxy type", "%s %s in %+v", proxy, typeURL, n.Proxies)
	return xds.TypeStatus{}
}

// TestGRPCClientFollowsCommits is the scenario of issue 5 over
// state-of-the-world ADS, with grpc-go's xDS client as the proxy: good
// commits move its RPCs, a commit it rejects is tainted and rolled back
// with grpc-go's own words while RPCs stay where they were, an invalid
// commit publishes nothing, and restarts (SIGKILL and SIGTERM) serve the
// last good revision, never the tainted one.
func TestGRPCClientFollowsCommits(t *testing.T) {
	a, b := startBackend(t, "A"), startBackend(t, "B")
	repo := newGitRepo(t)
	cfg := greeterConfig{route: "backend-a", portA: a.Port, portB: b.Port}
	sha1 := repo.Commit("route to A", cfg.files())
	lg := serveRepo(t, repo, legateOptions{})
	client := newGRPCClient(t, lg.xdsAddr, "grpc-1")

	// Commit 1 routes to A.
	client.lands("A", "commit 1 routes RPCs to A")
	n := lg.waitNode("InSync on commit 1", inSyncOn(sha1, 1))
	assert.Equal(t, "main@sha1:"+sha1, n.Published.Revision)
	assert.Equal(t, "grpc-1", n.Proxies[0].Proxy)
	assert.Equal(t, "sotw", n.Proxies[0].Stream)
	hash1 := n.Published.Hash

	// Commit 2 routes to B.
	cfg.route = "backend-b"
	sha2 := repo.Commit("route to B", cfg.files())
	lg.fetch(sha2)
	client.lands("B", "commit 2 moves RPCs to B")
	lg.waitNode("InSync on commit 2", inSyncOn(sha2, 1))

	// A commit that changes only a type grpc-go does not subscribe to (a
	// runtime layer) sends it nothing; the server reports it current, so
	// the node is InSync without waiting for the answer timeout.
	cfg.runtime = true
	sha2b := repo.Commit("add a runtime layer", cfg.files())
	lg.fetch(sha2b)
	lg.waitNode("InSync on the runtime commit", inSyncOn(sha2b, 1))
	client.keepsLanding("B", 5)
	cfg.runtime = false
	sha2 = repo.Commit("drop the runtime layer", cfg.files())
	lg.fetch(sha2)
	lg.waitNode("InSync on commit 2 again", inSyncOn(sha2, 1))

	// Commit 3 is valid for legate, but grpc-go rejects a STATIC cluster.
	cfg.staticB = true
	sha3 := repo.Commit("make backend-b STATIC", cfg.files())
	lg.fetch(sha3)
	n = lg.waitNode("Rollback to commit 2, accepted", func(n statuspage.NodeView) bool {
		return n.State == revisions.StateRollback && n.Published != nil && n.Published.Commit == sha2 &&
			len(n.History) > 1 && n.History[0].Commit == sha3 && n.History[0].Tainted &&
			n.Answers == revisions.AnswerCounts{Connected: 1, Accepted: 1}
	})
	taint := n.History[0].Taint
	require.NotNil(t, taint)
	assert.Contains(t, taint.Message, grpcRejection, "the taint carries grpc-go's own text")
	require.Len(t, taint.Proxies, 1)
	assert.Equal(t, "grpc-1", taint.Proxies[0].Proxy)
	assert.Contains(t, taint.Proxies[0].Error, grpcRejection)
	assert.False(t, n.History[1].Tainted)
	assert.Equal(t, sha2, n.History[1].Commit)
	revisionCount := len(n.History)
	client.keepsLanding("B", 20)

	// The client got the rejected clusters once: it NACKed once, and the
	// clusters it was sent last are the rollback's, which it ACKed.
	cds := typeStatus(t, n, "grpc-1", resourcev3.ClusterType)
	require.NotNil(t, cds.LastNACK)
	assert.Contains(t, cds.LastNACK.Error, grpcRejection)
	assert.Equal(t, n.Published.Version, cds.SentSnapshot)
	assert.Equal(t, n.Published.Version, cds.AckedSnapshot)
	assert.NotEqual(t, cds.LastNACK.Version, cds.SentVersion)
	assert.InDelta(t, 1, lg.mustMetric(clusterNACKs), 0)
	assert.InDelta(t, 1, lg.mustMetric(`legate_revisions_rollbacks_total{node="e2e"}`), 0)

	// Killed in Rollback, legate comes back serving commit 2 again, not the
	// tainted commit 3 that is still the branch head.
	lg.restart(syscall.SIGKILL)
	n = lg.waitNode("Rollback after SIGKILL, accepted by the reconnected client", func(n statuspage.NodeView) bool {
		return n.State == revisions.StateRollback && n.Published != nil && n.Published.Commit == sha2 &&
			n.Answers == revisions.AnswerCounts{Connected: 1, Accepted: 1}
	})
	require.Eventually(t, func() bool {
		s, err := lg.source()
		return err == nil && s.Commit == sha3 && s.LastApplied != nil
	}, waitFor, pollEvery, "the restarted legate fetched the tainted head again")
	n = lg.mustNode()
	assert.Equal(t, sha2, n.Published.Commit, "fetching the tainted head publishes nothing")
	assert.True(t, n.History[0].Tainted, "the taint survives the restart")
	assert.Equal(t, sha3, n.History[0].Commit)
	assert.Contains(t, n.History[0].Taint.Message, grpcRejection)
	client.keepsLanding("B", 20)
	assert.Zero(t, lg.mustMetric(clusterNACKs), "the tainted revision is not served after a restart")

	// An invalid commit is rejected by the renderer: nothing is published
	// and the source names the file and line.
	cfg = greeterConfig{route: "backend-a", invalid: true, portA: a.Port, portB: b.Port}
	files := cfg.files()
	sha4 := repo.Commit("invalid cluster field", files)
	lg.fetch(sha4)
	wantPos := fmt.Sprintf("%s:%d:", configFile, lineOf(t, files[configFile], "bogus_field"))
	require.Eventually(t, func() bool {
		s, err := lg.source()
		return err == nil && s.LastError != ""
	}, waitFor, pollEvery, "the render failure is reported")
	src := lg.mustSource()
	assert.Contains(t, src.LastError, wantPos)
	assert.Contains(t, src.LastError, "bogus_field")
	assert.Equal(t, "main@sha1:"+sha4, src.Revision)
	n = lg.mustNode()
	assert.Equal(t, revisions.StateRollback, n.State)
	assert.Equal(t, sha2, n.Published.Commit)
	assert.Len(t, n.History, revisionCount, "no revision for an invalid commit")
	client.keepsLanding("B", 10)

	// Commit 5 fixes everything and routes to A again: InSync. Its content
	// is commit 1's, so commit 1's revision moves to the top.
	cfg.invalid = false
	sha5 := repo.Commit("fix: EDS cluster, route to A", cfg.files())
	lg.fetch(sha5)
	client.lands("A", "commit 5 moves RPCs to A")
	n = lg.waitNode("InSync on commit 5", inSyncOn(sha5, 1))
	assert.Empty(t, lg.mustSource().LastError)
	require.Len(t, n.History, revisionCount)
	assert.Equal(t, hash1, n.History[0].Hash, "same content, same revision")
	assert.Equal(t, sha5, n.History[0].Commit)
	assert.True(t, n.History[1].Tainted, "commit 3 stays tainted")

	// A graceful restart serves commit 5 again.
	lg.restart(syscall.SIGTERM)
	lg.waitNode("InSync on commit 5 after SIGTERM", inSyncOn(sha5, 1))
	client.keepsLanding("A", 20)
	assert.Zero(t, lg.mustMetric(clusterNACKs))
	assert.Positive(t, lg.mustMetric(clusterResponses))

	// legate untaint clears commit 3's taint, by a prefix of its hash, and
	// only with the admin token; commit 5 stays what is served.
	tainted := lg.mustNode().History[1]
	require.True(t, tainted.Tainted)
	server := "--server=" + lg.url("")
	out, err := untaintCLI(t, nil, "untaint", "e2e", tainted.Hash[:12], server, "--state-dir", t.TempDir())
	require.Error(t, err, "no token: %s", out)
	assert.Contains(t, out, "no admin token")
	out, err = untaintCLI(t, []string{"LEGATE_TOKEN=not-the-token"}, "untaint", "e2e", tainted.Hash[:12], server)
	require.Error(t, err, "wrong token: %s", out)
	assert.Contains(t, out, "a valid admin bearer token is required")
	assert.True(t, lg.mustNode().History[1].Tainted, "refused calls clear nothing")
	out, err = untaintCLI(t, nil, "untaint", "e2e", tainted.Hash[:12], server, "--state-dir", lg.stateDir)
	require.NoError(t, err, out)
	assert.Contains(t, out, "taint cleared")
	n = lg.mustNode()
	assert.False(t, n.History[1].Tainted, "the taint is cleared at once")
	assert.Equal(t, tainted.Hash, n.History[1].Hash)
	assert.Equal(t, sha5, n.Published.Commit)
}

// untaintCLI runs the legate binary with env added to an environment
// without LEGATE_TOKEN*, and returns its combined output.
func untaintCLI(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(legateBin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LEGATE_TOKEN") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
