package statuspage

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/pipeline/nodestate"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/xds"
)

const (
	goodSHA = "1111111111111111111111111111111111111111"
	badSHA  = "3333333333333333333333333333333333333333"
)

// servedNode is a node that serves the revision of goodSHA, its newest.
func servedNode(id string, state revisions.State) revisions.NodeStatus {
	return revisions.NodeStatus{
		NodeID: id, State: state,
		Published: &revisions.PublishedStatus{Hash: "aaaaaaaaaaaaaaaa", Version: "aaaaaaaaaaaa-1", Commit: goodSHA, Revision: "main@sha1:" + goodSHA, Source: "cfg"},
		History:   []revisions.RevisionStatus{{Hash: "aaaaaaaaaaaaaaaa", Commit: goodSHA, Revision: "main@sha1:" + goodSHA, Source: "cfg"}},
		Answers:   revisions.AnswerCounts{Connected: 1, Accepted: 1},
	}
}

func TestNodeStateAgreesWithTheNewestCommit(t *testing.T) {
	proxy := []xds.ProxyStatus{{Proxy: "pod-1"}}
	invalid := Source{
		Name: "cfg", Revision: "main@sha1:" + badSHA, Commit: badSHA, AppliedRevision: "main@sha1:" + goodSHA, Invalid: true,
		LastError: "validation failed with 1 error(s)", Diagnostics: []string{"nodes/edge/cluster.yaml:3:1: bad"},
	}
	yamlTab := invalid
	yamlTab.Diagnostics = nil
	yamlTab.LastError = "nodes/edge/cluster.yaml:4:1: a tab character: YAML indents with spaces only"
	warned := Source{Name: "cfg", Revision: "main@sha1:" + goodSHA, Commit: goodSHA, Diagnostics: []string{"cluster.yaml:1:1: warning: deprecated field"}}
	kubeInvalid := Source{Name: "cfg", Revision: "default/edge@4", Invalid: true, Diagnostics: []string{"spec.resources[0]: bad"}}

	for _, tt := range []struct {
		name      string
		node      revisions.NodeStatus
		src       Source
		proxies   []xds.ProxyStatus
		state     revisions.State
		verdict   string
		summary   string
		noSummary string
	}{
		{
			"in sync", servedNode("edge", revisions.StateInSync),
			Source{Name: "cfg", Commit: goodSHA, Revision: "main@sha1:" + goodSHA},
			proxy,
			nodestate.InSync, VerdictServed, "serving the newest revision; accepted by 1 proxy", "",
		},
		{
			"validation rejected the newest commit of an in-sync node", servedNode("edge", revisions.StateInSync), invalid, proxy,
			nodestate.Rejected, VerdictRejectedValidation, "the newest commit 333333333333 was rejected by validation and reached no proxy; the revision of commit 111111111111 is still served", "serving the newest revision",
		},
		{
			"a YAML tab does not leave the node Pending", servedNode("edge", revisions.StatePending), yamlTab, nil,
			nodestate.Rejected, VerdictRejectedValidation, "was rejected by validation", "serving the newest revision",
		},
		{
			"warnings of an accepted commit are no rejection", servedNode("edge", revisions.StateInSync), warned, proxy,
			nodestate.InSync, VerdictServed, "serving the newest revision", "rejected",
		},
		{
			"an invalid EnvoyConfig generation", servedNode("edge", revisions.StateInSync), kubeInvalid, proxy,
			nodestate.Rejected, VerdictRejectedValidation, "the newest change default/edge@4 was rejected by validation", "serving the newest revision",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := NewNodeView(tt.node, tt.proxies, []Source{tt.src}, false)
			assert.Equal(t, tt.state, v.State)
			assert.Equal(t, tt.node.State, v.EngineState)
			require.NotNil(t, v.Attempt)
			assert.Equal(t, tt.verdict, v.Attempt.Verdict)
			assert.Contains(t, v.Summary, tt.summary)
			if tt.noSummary != "" {
				assert.NotContains(t, v.Summary, tt.noSummary)
			}
		})
	}
}

func TestPageOpensWithProblems(t *testing.T) {
	now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	src := Source{
		Name: "cfg", Kind: "git", URL: "https://gitea.example/org/cfg.git", Revision: "main@sha1:" + badSHA, Commit: badSHA,
		AppliedRevision: "main@sha1:" + goodSHA, Invalid: true, LastError: "validation failed", Diagnostics: []string{"nodes/b/cluster.yaml:3:1: bad"},
	}
	healthy := NewNodeView(servedNode("a", revisions.StateInSync), []xds.ProxyStatus{{Proxy: "pod-a"}}, nil, false)
	broken := NewNodeView(servedNode("b", revisions.StateInSync), []xds.ProxyStatus{{Proxy: "pod-b"}}, []Source{src}, false)

	page := func(srcs []Source, nodes ...NodeView) string {
		var b strings.Builder
		require.NoError(t, Page{Nodes: nodes, Sources: srcs, Now: now}.Write(&b))
		return b.String()
	}
	out := page([]Source{src}, healthy, broken)
	assert.Contains(t, out, "1 newest commit rejected · 1 in sync", "the counts include the rejection")
	assert.Contains(t, out, `<div class="banner bad" id="banner">needs attention: 1 newest commit rejected · 1 source with a problem</div>`)
	assert.Less(t, strings.Index(out, `data-node="b"`), strings.Index(out, `data-node="a"`), "the broken node comes first")
	assert.Contains(t, out, `<span class="badge state" title="`+StateMeaning(nodestate.Rejected)+`">Rejected</span>`)
	assert.NotContains(t, out, `>InSync</span>`+"\n</div>\n<p class=\"summary\">the newest commit", "no green badge over a rejection")
	assert.Contains(t, out, "Fix the error above and commit")

	out = page([]Source{{Name: "cfg", Kind: "git", Commit: goodSHA, Revision: "main@sha1:" + goodSHA}}, NewNodeView(servedNode("a", revisions.StateInSync), []xds.ProxyStatus{{Proxy: "pod-a"}}, nil, false))
	assert.Contains(t, out, `<div class="banner ok" id="banner">all is well: 1 in sync</div>`, "a healthy first screen looks different")
}

func TestRollbackCardSaysTheProxyTextOnceAndWhatToDo(t *testing.T) {
	now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	nodes, srcs := rollbackFixture(now)
	// The proxy's NACK is the text the taint quotes, as it is when one
	// proxy rejects: the page shows it once, with the newest commit.
	nodes[0].Proxies[0].Types[0].LastNACK.Error = `<script>alert("x")</script>`
	var b strings.Builder
	require.NoError(t, Page{Nodes: nodes, Sources: srcs, Now: now}.Write(&b))
	out := b.String()
	assert.Equal(t, 1, strings.Count(out, "&lt;script&gt;alert"), "the proxies' text appears once")
	assert.Contains(t, out, "NACK 9d9d9d9d9d9d-2 (the rejection above)")
	assert.Contains(t, out, "Fix the configuration and commit")
	assert.Contains(t, out, "legate untaint edge bbbbbbbbbbbb re-publishes that revision; if the proxies still reject it, it is tainted again within seconds")
}

func TestUnconfiguredNodeHasAHint(t *testing.T) {
	v := UnconfiguredView("egde", []xds.ProxyStatus{{Proxy: "pod-9"}}, []string{"edge", "ingress"})
	assert.Equal(t, nodestate.Unconfigured, v.State)
	assert.Equal(t, []string{"edge"}, v.Closest)
	assert.Equal(t, "1 proxy asks for this node ID and nothing configures it, so it gets no configuration; did you mean edge? (the node ID in the proxy's bootstrap)", v.Summary)

	var b strings.Builder
	require.NoError(t, Page{Nodes: []NodeView{v}, Now: time.Unix(0, 0)}.Write(&b))
	out := b.String()
	assert.Contains(t, out, `data-node="egde" data-state="Unconfigured"`)
	assert.Contains(t, out, "did you mean edge?")
	assert.Contains(t, out, "Correct node.id in the proxy&#39;s bootstrap")
	assert.Contains(t, out, "1 unconfigured")
}

func TestKubeRevisionsShowTheirOrigin(t *testing.T) {
	st := revisions.NodeStatus{
		NodeID: "default/edge", State: revisions.StateInSync,
		Published: &revisions.PublishedStatus{Hash: "aaaaaaaaaaaaaaaa", Version: "v", Revision: "default/edge@3", Source: "envoyconfig/default/edge"},
		History:   []revisions.RevisionStatus{{Hash: "aaaaaaaaaaaaaaaa", Revision: "default/edge@3", Source: "envoyconfig/default/edge"}},
	}
	var b strings.Builder
	require.NoError(t, Page{Nodes: []NodeView{NewNodeView(st, nil, nil, false)}, Now: time.Unix(0, 0)}.Write(&b))
	out := b.String()
	assert.Contains(t, out, `<code title="default/edge@3">default/edge@3</code>`, "an object's generation stands in for the commit")
	assert.NotContains(t, out, `<code title="">-</code>`)
}

// An EnvoyConfig has no commit: what to do next is to apply the object
// again, and no text names an empty commit.
func TestEnvoyConfigNodesAreFixedByAnApplyNotACommit(t *testing.T) {
	const src = "envoyconfig/default/edge"
	node := func(state revisions.State, tainted bool) revisions.NodeStatus {
		st := revisions.NodeStatus{
			NodeID: "edge", State: state,
			Published: &revisions.PublishedStatus{Hash: "aaaaaaaaaaaaaaaa", Version: "v", Revision: "default/edge@3", Source: src},
			History:   []revisions.RevisionStatus{{Hash: "aaaaaaaaaaaaaaaa", Revision: "default/edge@3", Source: src}},
			Answers:   revisions.AnswerCounts{Connected: 1, Accepted: 1},
		}
		if tainted {
			st.History = append([]revisions.RevisionStatus{{Hash: "bbbbbbbbbbbbbbbb", Revision: "default/edge@4", Source: src, Tainted: true, Taint: &revisions.Taint{Message: "rejected by 1 of 1 proxies"}}}, st.History...)
		}
		return st
	}
	invalid := Source{Name: src, Revision: "default/edge@5", AppliedRevision: "default/edge@4", Invalid: true, Diagnostics: []string{"EnvoyConfig default/edge spec.resources[0].value.conect_timeout: unknown field"}}

	rejected := NewNodeView(node(revisions.StateInSync, false), nil, []Source{invalid}, false)
	require.Equal(t, nodestate.Rejected, rejected.State)
	assert.Equal(t, "change default/edge@5", rejected.Attempt.Name())
	assert.Equal(t, []string{"Fix the EnvoyConfig and apply it again; legate validate FILE shows every error of its manifest, with lines, before you apply."}, NextSteps(rejected))

	rolledBack := NewNodeView(node(revisions.StateRollback, true), nil, []Source{invalid}, false)
	require.Equal(t, nodestate.Rollback, rolledBack.State)
	assert.Contains(t, rolledBack.Summary, "and the newest change default/edge@5 was rejected by validation")
	assert.NotContains(t, rolledBack.Summary, "commit  ", "no empty commit")
	assert.Contains(t, NextSteps(rolledBack)[0], "Fix the EnvoyConfig and apply it again")

	var b strings.Builder
	require.NoError(t, Page{Nodes: []NodeView{rejected}, Sources: []Source{invalid}, Now: time.Unix(0, 0)}.Write(&b))
	assert.Contains(t, b.String(), `<dt>newest change</dt><dd class="attempt"><code title="default/edge@5">default/edge@5</code>`)

	// Proxies rejected its newest generation: untaint goes through the
	// API server.
	nacked := NewNodeView(node(revisions.StateRollback, true), nil, nil, false)
	require.Equal(t, VerdictRejectedByProxies, nacked.Attempt.Verdict)
	require.Len(t, NextSteps(nacked), 2)
	assert.Contains(t, NextSteps(nacked)[1], "legate untaint edge bbbbbbbbbbbb --kubeconfig FILE re-publishes that revision")

	// A commit keeps the words of a commit.
	commit := NewNodeView(servedNode("edge", revisions.StateInSync), nil, []Source{{Name: "cfg", Revision: "main@sha1:" + badSHA, Commit: badSHA, Invalid: true, LastError: "bad"}}, false)
	assert.Equal(t, "commit 333333333333", commit.Attempt.Name())
	assert.Equal(t, []string{"Fix the error above and commit; legate validate DIR shows every error before you push."}, NextSteps(commit))
}

// A node shared with other namespaces says that their proxies are not
// counted while the owner's own decide, and counts only the owner's in its
// "of N proxies".
func TestSummaryLeavesGuestsAside(t *testing.T) {
	n := servedNode("gw", revisions.StateDegraded)
	n.Answers = revisions.AnswerCounts{Connected: 4, Accepted: 1, Rejected: 1, GuestsAside: 2}
	proxies := []xds.ProxyStatus{{Proxy: "own-1"}, {Proxy: "own-2"}, {Proxy: "team-a/pod"}, {Proxy: "team-b/pod"}}
	v := NewNodeView(n, proxies, []Source{{Name: "cfg", Commit: goodSHA, Revision: "main@sha1:" + goodSHA}}, false)
	assert.Contains(t, v.Summary, "rejected by 1 of 2 proxies, below the taint threshold")
	assert.Contains(t, v.Summary, "2 proxies of the namespaces this node is shared with not counted")
}
