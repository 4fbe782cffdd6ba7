package statuspage

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/pipeline/nodestate"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/xds"
)

// rollbackFixture is a node rolled back from a commit its proxy rejected,
// whose source then got an invalid commit.
func rollbackFixture(now time.Time) ([]NodeView, []Source) {
	earlier := now.Add(-2 * time.Hour)
	taint := `rejected by 1 of 1 proxies; pod-1: <script>alert("x")</script>`
	nodes := []NodeView{{
		NodeStatus: revisions.NodeStatus{
			NodeID:    "edge",
			State:     revisions.StateRollback,
			Published: &revisions.PublishedStatus{Hash: "aaaaaaaaaaaaaaaa", Version: "aaaaaaaaaaaa-3", Commit: "1111111111111111111111111111111111111111", Source: "cfg"},
			History: []revisions.RevisionStatus{
				{
					Hash: "bbbbbbbbbbbbbbbb", Commit: "2222222222222222222222222222222222222222", Source: "cfg", CreatedAt: earlier,
					Message: "Route /api to the new backend\n\nlong body", Author: "Ada <ada@example.com>",
					Tainted: true, Taint: &revisions.Taint{Message: taint},
				},
				{Hash: "aaaaaaaaaaaaaaaa", Commit: "1111111111111111111111111111111111111111", Source: "cfg", CreatedAt: earlier, PublishedAt: &earlier, Message: "first", Author: "Bob <bob@example.com>"},
			},
			Answers: revisions.AnswerCounts{Connected: 1, Accepted: 1},
		},
		Proxies: []xds.ProxyStatus{{
			Proxy: "pod-1", Identity: "spiffe://example.org/edge", Address: "10.0.0.7:51234", UserAgent: "envoy 1.36.0", Stream: "sotw", ConnectedSince: earlier,
			Types: []xds.TypeStatus{{
				TypeURL: "type.googleapis.com/envoy.config.cluster.v3.Cluster", SentVersion: "3c959b7021e1-3", SentSnapshot: "aaaaaaaaaaaa-3",
				AckedVersion: "3c959b7021e1-3", AckedSnapshot: "aaaaaaaaaaaa-3",
				LastNACK: &xds.NACKStatus{Version: "9d9d9d9d9d9d-2", Error: "unsupported cluster type"},
			}},
		}},
		State:   nodestate.Rollback,
		Summary: "rolled back: the proxies rejected newer revisions",
		Attempt: &Attempt{Commit: "2222222222222222222222222222222222222222", Hash: "bbbbbbbbbbbbbbbb", Verdict: VerdictRejectedByProxies, Error: taint},
	}}
	srcs := []Source{{
		Name: "cfg", Kind: "git", URL: "https://gitea.example/org/envoy-config.git",
		Revision: "main@sha1:2222222222222222222222222222222222222222", Commit: "2222222222222222222222222222222222222222",
		AppliedRevision: "main@sha1:2222222222222222222222222222222222222222", Nodes: []string{"edge"}, LastFetch: &now,
		Rejection: "commit 222222222222 rejected by proxies (rolled back): node edge: rejected by 1 of 1 proxies",
	}}
	return nodes, srcs
}

func TestStatusPageShowsWhatIsServedAndWhy(t *testing.T) {
	now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	nodes, srcs := rollbackFixture(now)
	var b strings.Builder
	require.NoError(t, Page{Nodes: nodes, Sources: srcs, Forges: map[string]forge.Provider{"cfg": forge.ProviderGitea}, Now: now}.Write(&b))
	page := b.String()
	for _, want := range []string{
		`<span class="badge state" title="` + StateMeaning(nodestate.Rollback) + `">Rollback</span>`,
		`class="served"><td data-label="revision"><span><code>aaaaaaaaaaaa</code> <span class="badge ok"`,
		`href="https://gitea.example/org/envoy-config/commit/2222222222222222222222222222222222222222"`,
		`<td data-label="message"><span>Route /api to the new backend</span></td><td data-label="author"><span>Ada</span></td><td data-label="created"><span>2h ago</span></td>`,
		`<span class="badge bad">rejected by proxies</span>`,
		"rejected by proxies (error above)",
		"spiffe://example.org/edge", "10.0.0.7:51234", "envoy 1.36.0",
		`<code>3c959b7021e1-3</code> (<a class="mono" href="#rev-edge-aaaaaaaaaaaa">aaaaaaaaaaaa</a>)`,
		`<tr id="rev-edge-aaaaaaaaaaaa" class="served">`,
		"NACK 9d9d9d9d9d9d-2: unsupported cluster type",
		"the proxies rejected commit 222222222222 (rolled back): see node edge",
		"<b>RollbackFailed</b><span>" + StateMeaning(nodestate.RollbackFailed) + "</span>",
	} {
		assert.Contains(t, page, want)
	}
	assert.Equal(t, 1, strings.Count(page, "pod-1: &lt;script&gt;"), "the proxies' error is shown once")
	assert.NotContains(t, page, "<script>", "user text is escaped")
	assert.NotContains(t, page, "ada@example.com", "authors' addresses are not shown")
}

func TestStatusPageShowsValidationErrorsOnce(t *testing.T) {
	now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	srcs := []Source{{
		Name: "cfg", Kind: "git", URL: "/srv/cfg", Revision: "main@sha1:3333", AppliedRevision: "main@sha1:2222", Invalid: true,
		LastError: "validation failed with 1 error(s): nodes/edge/a.yaml:3:1: bad", Diagnostics: []string{"nodes/edge/a.yaml:3:1: bad"},
	}}
	var b strings.Builder
	require.NoError(t, Page{Nodes: nil, Sources: srcs, Forges: nil, Now: now}.Write(&b))
	page := b.String()
	assert.Equal(t, 1, strings.Count(page, "nodes/edge/a.yaml:3:1: bad"))
	assert.Contains(t, page, "no nodes yet")
	assert.NotContains(t, page, "<a href=\"/srv", "a local path is not a forge link")
}

// The diagnostics of an accepted commit are its warnings (a route to a
// cluster the node does not define, which Envoy accepts): the commit is
// served, so the page must not call it a validation failure nor raise the
// banner, and a later fetch failure keeps its own text.
func TestStatusPageShowsWarningsOfAnAcceptedCommitAsWarnings(t *testing.T) {
	now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	warning := `nodes/edge/routes.yaml:11:18: warning: route "edge-routes" virtual_hosts[0].routes[0].route.cluster: cluster "backendd" is not defined for node "edge"`
	accepted := Source{
		Name: "cfg", Kind: "git", URL: "/srv/cfg", Revision: "main@sha1:3333", AppliedRevision: "main@sha1:3333",
		Nodes: []string{"edge"}, Diagnostics: []string{warning},
	}
	page := func(src Source) string {
		var b strings.Builder
		require.NoError(t, Page{Sources: []Source{src}, Now: now}.Write(&b))
		return b.String()
	}
	out := page(accepted)
	assert.NotContains(t, out, "validation failed", "an accepted commit did not fail validation")
	assert.NotContains(t, out, `class="banner bad"`, "a warning needs no attention banner")
	assert.Contains(t, out, `<div class="warntext">accepted and served, with warnings:</div><div class="warntext mono">`)
	assert.Contains(t, out, "cluster &#34;backendd&#34; is not defined")
	assert.NotContains(t, out, `<span class="muted">none</span>`, "a source with warnings does not say it has none")

	failed := accepted
	failed.LastError = "fetch: repository not found"
	out = page(failed)
	assert.Contains(t, out, `<div class="err">fetch: repository not found</div>`, "the fetch error is not replaced by the warnings' heading")
	assert.Contains(t, out, "needs attention: 1 source with a problem")
	assert.NotContains(t, out, "validation failed")
}

func TestCommitURL(t *testing.T) {
	sha := "0123456789abcdef0123456789abcdef01234567"
	for _, tt := range []struct {
		repo     string
		provider forge.Provider
		want     string
	}{
		{"https://github.com/org/cfg.git", "", "https://github.com/org/cfg/commit/" + sha},
		{"git@github.com:org/cfg.git", forge.ProviderGitHub, "https://github.com/org/cfg/commit/" + sha},
		{"ssh://git@gitea.example:2222/org/cfg.git", forge.ProviderGitea, "https://gitea.example/org/cfg/commit/" + sha},
		{"http://127.0.0.1:3000/org/cfg.git", forge.ProviderGitea, "http://127.0.0.1:3000/org/cfg/commit/" + sha},
		{"https://gitlab.example/group/sub/cfg.git", forge.ProviderGitLab, "https://gitlab.example/group/sub/cfg/-/commit/" + sha},
		{"https://gitlab.com/group/cfg", "", "https://gitlab.com/group/cfg/-/commit/" + sha},
		{"/srv/git/cfg", "", ""},
		{"file:///srv/git/cfg", "", ""},
		{"oci://registry.example/cfg", "", ""},
	} {
		assert.Equal(t, tt.want, commitURL(tt.repo, tt.provider, sha), tt.repo)
	}
	assert.Empty(t, commitURL("https://github.com/org/cfg", "", ""))
}

func TestStatusPageMarksOrphansAndNodesWithoutProxies(t *testing.T) {
	now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	nodes := []NodeView{{
		NodeStatus: revisions.NodeStatus{
			NodeID: "old", State: revisions.StatePending,
			Published: &revisions.PublishedStatus{Hash: "aaaaaaaaaaaaaaaa", Version: "aaaaaaaaaaaa-1"},
			History:   []revisions.RevisionStatus{{Hash: "aaaaaaaaaaaaaaaa", CreatedAt: now}},
		},
		State: nodestate.Pending, Orphaned: true, Summary: "serving the newest revision; no proxy of this node is connected now, so its verdict waits for one",
	}}
	srcs := []Source{{Name: "cfg", Kind: "git", URL: "/srv/cfg", Suspended: true}}
	var b strings.Builder
	require.NoError(t, Page{Nodes: nodes, Sources: srcs, Forges: nil, Now: now}.Write(&b))
	page := b.String()
	assert.Contains(t, page, `title="no proxy of this node is connected to legate">no proxy connected</span>`)
	assert.Contains(t, page, `>orphaned</span>`)
	assert.Contains(t, page, `<b>cfg</b> <span class="badge warn">suspended</span>`)
	assert.Contains(t, page, "1 pending")
}
