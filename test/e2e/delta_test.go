package e2e

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/statuspage"
)

const rawRejection = "raw client: STATIC clusters are not supported here"

// hasStaticCluster reports whether resources hold a STATIC cluster.
func hasStaticCluster(t *testing.T, resources []*anypb.Any) bool {
	for _, r := range resources {
		var c clusterv3.Cluster
		if r.MessageIs(&c) {
			require.NoError(t, r.UnmarshalTo(&c))
			if c.GetType() == clusterv3.Cluster_STATIC {
				return true
			}
		}
	}
	return false
}

// TestDeltaClientFollowsCommits: grpc-go speaks state-of-the-world only, so
// a raw incremental (delta) ADS stream plays the proxy: it ACKs good
// commits, NACKs a STATIC cluster, and the node goes InSync → Rollback →
// InSync.
func TestDeltaClientFollowsCommits(t *testing.T) {
	repo := newGitRepo(t)
	cfg := greeterConfig{route: "backend-a", portA: 10001, portB: 10002}
	sha1 := repo.Commit("route to A", cfg.files())
	lg := serveRepo(t, repo, legateOptions{})
	c := startRawDelta(t, lg.xdsAddr, "delta-1", func(typeURL string, resources []*anypb.Any) string {
		if typeURL == resourcev3.ClusterType && hasStaticCluster(t, resources) {
			return rawRejection
		}
		return ""
	})

	n := lg.waitNode("InSync on commit 1", inSyncOn(sha1, 1))
	assert.Equal(t, "delta", n.Proxies[0].Stream)
	assert.Equal(t, "delta-1", n.Proxies[0].Proxy)

	cfg.route, cfg.staticB = "backend-b", true
	sha2 := repo.Commit("route to a STATIC backend-b", cfg.files())
	lg.fetch(sha2)
	n = lg.waitNode("Rollback to commit 1, accepted", func(n statuspage.NodeView) bool {
		return n.State == revisions.StateRollback && n.Published != nil && n.Published.Commit == sha1 &&
			n.History[0].Commit == sha2 && n.History[0].Tainted &&
			n.Answers == revisions.AnswerCounts{Connected: 1, Accepted: 1}
	})
	assert.Contains(t, n.History[0].Taint.Message, rawRejection)
	assert.Contains(t, n.History[0].Taint.Message, "delta-1")

	// The rollback re-sent the clusters the client had before, and the
	// rejected ones came exactly once.
	var static, nacked int
	var last received
	for _, r := range c.responses() {
		if r.typeURL != resourcev3.ClusterType {
			continue
		}
		last = r
		if hasStaticCluster(t, r.resources) {
			static++
		}
		if r.nacked {
			nacked++
		}
	}
	assert.Equal(t, 1, static)
	assert.Equal(t, 1, nacked)
	assert.False(t, last.nacked)
	cds := typeStatus(t, n, "delta-1", resourcev3.ClusterType)
	assert.Equal(t, n.Published.Version, cds.SentSnapshot, "the last clusters sent are the rollback's")
	assert.Equal(t, n.Published.Version, cds.AckedSnapshot)
	assert.Equal(t, last.version, cds.SentVersion)

	cfg.staticB = false
	sha3 := repo.Commit("fix: EDS backend-b", cfg.files())
	lg.fetch(sha3)
	lg.waitNode("InSync on commit 3", inSyncOn(sha3, 1))
	assert.InDelta(t, 1, lg.mustMetric(clusterNACKs), 0)
}
