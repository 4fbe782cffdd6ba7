package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/statuspage"
)

// TestOneOfTwoProxiesRejects: grpc-go rejects a STATIC cluster, a raw ADS
// client of the same node takes everything. At the default threshold (all
// proxies must reject) the node is Degraded and nothing is rolled back.
func TestOneOfTwoProxiesRejects(t *testing.T) {
	a, b := startBackend(t, "A"), startBackend(t, "B")
	repo := newGitRepo(t)
	cfg := greeterConfig{route: "backend-b", portA: a.Port, portB: b.Port}
	sha1 := repo.Commit("route to B", cfg.files())
	lg := serveRepo(t, repo, legateOptions{})
	client := newGRPCClient(t, lg.xdsAddr, "grpc-1")
	raw := startRawSotW(t, lg.xdsAddr, "raw-1", acceptAll)

	client.lands("B", "commit 1 routes RPCs to B")
	lg.waitNode("InSync on commit 1 with two proxies", inSyncOn(sha1, 2))

	cfg.staticB = true
	sha2 := repo.Commit("make backend-b STATIC", cfg.files())
	lg.fetch(sha2)
	n := lg.waitNode("Degraded on commit 2", func(n statuspage.NodeView) bool {
		return n.State == revisions.StateDegraded && n.Published != nil && n.Published.Commit == sha2 &&
			n.Answers == revisions.AnswerCounts{Connected: 2, Accepted: 1, Rejected: 1}
	})
	assert.False(t, n.History[0].Tainted, "below the threshold nothing is tainted")
	assert.Zero(t, lg.mustMetric(`legate_revisions_rollbacks_total{node="e2e"}`))
	assert.InDelta(t, 1, lg.mustMetric(clusterNACKs), 0)
	client.keepsLanding("B", 20)

	// The raw client runs commit 2: its last clusters are the STATIC one.
	var staticSeen bool
	for _, r := range raw.responses() {
		if r.typeURL == "type.googleapis.com/"+clusterType && hasStaticCluster(t, r.resources) {
			staticSeen = true
		}
	}
	assert.True(t, staticSeen, "the accepting proxy received commit 2")
}
