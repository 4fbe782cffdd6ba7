package standalone

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/xds"
)

func TestStatusPageShowsStateAndEscapesUserText(t *testing.T) {
	now := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	nodes := []NodeView{{
		NodeStatus: revisions.NodeStatus{
			NodeID:    "edge",
			State:     revisions.StateRollback,
			Published: &revisions.PublishedStatus{Hash: "aaaaaaaaaaaaaaaa", Version: "aaaaaaaaaaaa-3", Revision: "main@sha1:1111"},
			History: []revisions.RevisionStatus{
				{
					Hash: "bbbbbbbbbbbbbbbb", Revision: "main@sha1:2222", CreatedAt: now, Tainted: true,
					Taint: &revisions.Taint{Message: `rejected by 1 of 1 proxies: <script>alert("x")</script>`},
				},
				{Hash: "aaaaaaaaaaaaaaaa", Revision: "main@sha1:1111", CreatedAt: now, PublishedAt: &now},
			},
			Answers: revisions.AnswerCounts{Connected: 1, Accepted: 1},
			Waiting: &revisions.WaitingStatus{Hash: "cccccccccccccccc", Revision: "main@sha1:3333", Message: `secret "tls" missing`, Since: now},
		},
		Proxies: []xds.ProxyStatus{{Proxy: "pod-1", Stream: "sotw", ConnectedSince: now, Types: []xds.TypeStatus{
			{
				TypeURL: "type.googleapis.com/envoy.config.cluster.v3.Cluster", SentVersion: "v2", AckedVersion: "v2",
				LastNACK: &xds.NACKStatus{Version: "v1", Error: "unsupported cluster type"},
			},
		}}},
	}}
	srcs := []SourceStatus{{
		Name: "default", Kind: "git", URL: "https://git.example/cfg", Revision: "main@sha1:2222",
		Nodes: []string{"edge"}, LastFetch: &now, LastError: "validation failed", Diagnostics: []string{"nodes/edge/a.yaml:3:1: bad"},
	}}

	var b strings.Builder
	require.NoError(t, writeStatusPage(&b, nodes, srcs))
	page := b.String()
	for _, want := range []string{
		`<span class="state Rollback">Rollback</span>`, "aaaaaaaaaaaa", "main@sha1:2222", "pod-1",
		"unsupported cluster type", "nodes/edge/a.yaml:3:1: bad", "2026-11-22T01:00:00Z",
		"waiting to serve <code>cccccccccccc</code> from <code>main@sha1:3333</code>", "secret &#34;tls&#34; missing",
	} {
		assert.Contains(t, page, want)
	}
	assert.NotContains(t, page, "<script>", "user text is escaped")
	assert.Contains(t, page, "&lt;script&gt;")
}

func TestStatusPageWithoutNodes(t *testing.T) {
	var b strings.Builder
	require.NoError(t, writeStatusPage(&b, nil, nil))
	assert.Contains(t, b.String(), "no nodes yet")
	assert.Contains(t, b.String(), "no sources")
}
