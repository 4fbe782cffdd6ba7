package main

import (
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/pipeline/nodestate"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/statuspage"
	"github.com/legate-dev/legate/xds"
)

func TestPrintStatusShowsVerdictsAndStates(t *testing.T) {
	now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	created := now.Add(-3 * time.Hour)
	nodes := []statuspage.NodeView{{
		NodeStatus: revisions.NodeStatus{
			NodeID:    "edge",
			State:     revisions.StateRollback,
			Published: &revisions.PublishedStatus{Hash: "aaaaaaaaaaaaaaaa", Commit: "1111111111111111"},
			History: []revisions.RevisionStatus{
				{Hash: "bbbbbbbbbbbbbbbb", Commit: "2222222222222222", CreatedAt: created, Tainted: true, Taint: &revisions.Taint{Message: "rejected by 1 of 1 proxies"}},
				{Hash: "aaaaaaaaaaaaaaaa", Commit: "1111111111111111", CreatedAt: created},
			},
		},
		State:   nodestate.Rollback,
		Summary: "rolled back: the proxies rejected newer revisions",
		Attempt: &statuspage.Attempt{Commit: "2222222222222222", Hash: "bbbbbbbbbbbbbbbb", Verdict: statuspage.VerdictRejectedByProxies, Error: "rejected by 1 of 1 proxies"},
	}}
	srcs := []statuspage.Source{{Name: "config", Revision: "main@sha1:2222222222222222", AppliedRevision: "main@sha1:2222222222222222", Rejection: "commit 222222222222 rejected by proxies (rolled back)"}}

	var b strings.Builder
	printStatus(&b, nodes, srcs, false, now)
	out := b.String()
	for _, want := range []string{
		"config  main@sha1:222222222222  same     -      commit 222222222222 rejected by proxies (rolled back)",
		"edge  Rollback  aaaaaaaaaaaa  111111111111  none connected  222222222222 rejected by proxies",
		"edge: newest commit 222222222222 rejected by proxies: rejected by 1 of 1 proxies",
		"Rollback: " + statuspage.StateMeaning(nodestate.Rollback),
	} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "InSync:", "only the states shown are explained")

	b.Reset()
	printNode(&b, nodes[0], false, now)
	out = b.String()
	for _, want := range []string{
		"State:    Rollback — " + statuspage.StateMeaning(nodestate.Rollback),
		"     bbbbbbbbbbbb  222222222222  -       3h ago   TAINTED: rejected by 1 of 1 proxies",
		"  *  aaaaaaaaaaaa  111111111111  -       3h ago   -",
		"Proxies:\n  none connected",
	} {
		assert.Contains(t, out, want)
	}
}

func TestStatusNamesTheServerItCannotReach(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there any more
	for _, server := range []string{"http://" + addr, addr} {
		_, err = runLegate(t, "status", "--server", server)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "cannot reach legate serve at http://"+addr+" (is it running? --server sets its HTTP address)")
	}
}

func TestServerURL(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:8080":          "http://127.0.0.1:8080",
		":9000":                   "http://127.0.0.1:9000",
		"localhost:8080":          "http://localhost:8080",
		"https://legate.example/": "https://legate.example",
		"http://10.0.0.5:8080":    "http://10.0.0.5:8080",
	} {
		got, err := serverURL(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "ftp://x", "http://"} {
		_, err := serverURL(bad)
		assert.Error(t, err, bad)
	}
}

func TestHumanDurations(t *testing.T) {
	for d, want := range map[time.Duration]string{
		87600 * time.Hour:              "10y",
		90 * 24 * time.Hour:            "90d",
		26*time.Hour + 5*time.Minute:   "1d2h",
		5*time.Hour + 3*time.Minute:    "5h3m",
		42 * time.Second:               "42s",
		365*24*time.Hour + time.Minute: "1y",
	} {
		assert.Equal(t, want, humanDuration(d))
	}
	for in, want := range map[string]time.Duration{"10y": 87600 * time.Hour, "1y30d": 395 * 24 * time.Hour, "90d12h": 90*24*time.Hour + 12*time.Hour, "720h": 720 * time.Hour} {
		got, err := parseHumanDuration(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "xd", "10", "-5d"} {
		_, err := parseHumanDuration(bad)
		assert.Error(t, err, bad)
	}
}

// legate status says what the page says: problems first, the counts with
// the rejection, what to do, and the proxies of a misspelt node ID.
func TestPrintStatusShowsProblemsFirstWithNextSteps(t *testing.T) {
	now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	good, bad := strings.Repeat("1", 40), strings.Repeat("3", 40)
	served := revisions.NodeStatus{
		NodeID: "edge", State: revisions.StateInSync,
		Published: &revisions.PublishedStatus{Hash: "aaaaaaaaaaaaaaaa", Commit: good, Revision: "main@sha1:" + good, Source: "cfg"},
		History:   []revisions.RevisionStatus{{Hash: "aaaaaaaaaaaaaaaa", Commit: good, Revision: "main@sha1:" + good, Source: "cfg", CreatedAt: now}},
		Answers:   revisions.AnswerCounts{Connected: 1, Accepted: 1},
	}
	healthy := served
	healthy.NodeID = "api"
	healthy.History = []revisions.RevisionStatus{{Hash: "aaaaaaaaaaaaaaaa", Commit: good, Revision: "main@sha1:" + good, Source: "other", CreatedAt: now}}
	src := statuspage.Source{
		Name: "cfg", Commit: bad, Revision: "main@sha1:" + bad, AppliedRevision: "main@sha1:" + good, Invalid: true,
		LastError: "validation failed", Diagnostics: []string{"nodes/edge/cluster.yaml:4:1: found a tab character; YAML indents with spaces"},
	}
	nodes := []statuspage.NodeView{
		statuspage.NewNodeView(healthy, nil, nil, false),
		statuspage.NewNodeView(served, nil, []statuspage.Source{src}, false),
		statuspage.UnconfiguredView("egde", []xds.ProxyStatus{{Proxy: "pod-9"}}, []string{"api", "edge"}),
	}
	var b strings.Builder
	printStatus(&b, nodes, []statuspage.Source{src}, false, now)
	out := b.String()
	assert.Regexp(t, `(?s)edge\s+Rejected.*egde\s+Unconfigured.*api\s+InSync`, out, "problems first")
	assert.Contains(t, out, "nodes: 1 newest commit rejected · 1 unconfigured · 1 in sync")
	assert.Contains(t, out, "edge: newest commit 333333333333 rejected by validation: nodes/edge/cluster.yaml:4:1: found a tab character")
	assert.Contains(t, out, "  → Fix the error above and commit")
	assert.Contains(t, out, "did you mean edge?")
	assert.NotContains(t, out, "serving the newest revision; accepted by 1 proxy\n\nedge", "no healthy summary for the rejected node")

	b.Reset()
	printNode(&b, nodes[1], false, now)
	assert.Contains(t, b.String(), "State:    Rejected — "+statuspage.StateMeaning(nodestate.Rejected))
	assert.Contains(t, b.String(), "Summary:  the newest commit 333333333333 was rejected by validation and reached no proxy; the revision of commit 111111111111 is still served")
	assert.Regexp(t, `(?s)Newest:   commit 333333333333 rejected by validation: nodes/edge/cluster.yaml:4:1: found a tab.*\nNext:     Fix the error above and commit`, b.String(), "what to do follows the error it calls the error above")
}

// A commit with warnings is served: legate status lists the warnings
// under the tables (as the page does) and never as the source's error.
func TestPrintStatusShowsTheWarningsOfAnAcceptedCommit(t *testing.T) {
	now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	sha := strings.Repeat("1", 40)
	warning := `nodes/edge/routes.yaml:11:18: warning: route "edge-routes" virtual_hosts[0].routes[0].route.cluster: cluster "backendd" is not defined for node "edge"`
	srcs := []statuspage.Source{
		{Name: "cfg", Commit: sha, Revision: "main@sha1:" + sha, AppliedRevision: "main@sha1:" + sha, Nodes: []string{"edge"}, Diagnostics: []string{warning}},
		{Name: "bad", Commit: sha, Revision: "main@sha1:" + sha, Invalid: true, LastError: "validation failed", Diagnostics: []string{"nodes/x/a.yaml:1:1: bad"}},
	}
	var b strings.Builder
	printStatus(&b, nil, srcs, false, now)
	out := b.String()
	assert.Contains(t, out, "\ncfg: accepted with 1 warning:\n  "+warning+"\n")
	assert.Regexp(t, `cfg\s+main@sha1:111111111111\s+same\s+edge\s+-\n`, out, "a warning is not the source's error")
	assert.NotContains(t, out, "bad: accepted", "the errors of a rejected commit are no warnings")
}

func TestUntaintSaysWhatHappensNext(t *testing.T) {
	var b strings.Builder
	printUntainted(&b, "edge", strings.Repeat("b", 64))
	assert.Equal(t, "taint cleared: node edge revision bbbbbbbbbbbb\n"+
		"if it is the newest untainted revision of node edge, it is published again now; if the proxies still reject it, it is tainted again within seconds and node edge rolls back again (legate status edge shows which)\n", b.String())
}

// A long problem is cut in the narrow sources table and said in full
// once below it: under the node it stopped, or under the source when no
// node shows it.
func TestPrintStatusSaysALongProblemOnce(t *testing.T) {
	now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	good, bad := strings.Repeat("1", 40), strings.Repeat("3", 40)
	tab := "nodes/edge/cluster.yaml:4:1: a tab character: YAML indents with spaces only, so this file cannot be read"
	unreachable := "fetch main: dial tcp 192.0.2.1:443: connect: connection refused, again after 5 tries over 2m0s"
	served := revisions.NodeStatus{
		NodeID: "edge", State: revisions.StateInSync,
		Published: &revisions.PublishedStatus{Hash: "aaaaaaaaaaaaaaaa", Commit: good, Revision: "main@sha1:" + good, Source: "cfg"},
		History:   []revisions.RevisionStatus{{Hash: "aaaaaaaaaaaaaaaa", Commit: good, Revision: "main@sha1:" + good, Source: "cfg", CreatedAt: now}},
		Answers:   revisions.AnswerCounts{Connected: 1, Accepted: 1},
	}
	srcs := []statuspage.Source{
		{Name: "cfg", Commit: bad, Revision: "main@sha1:" + bad, AppliedRevision: "main@sha1:" + good, Invalid: true, LastError: tab},
		{Name: "far", LastError: unreachable},
	}
	nodes := []statuspage.NodeView{statuspage.NewNodeView(served, nil, srcs[:1], false)}
	var b strings.Builder
	printStatus(&b, nodes, srcs, false, now)
	out := b.String()
	assert.Equal(t, 1, strings.Count(out, tab), out)
	assert.Contains(t, out, "edge: newest commit 333333333333 rejected by validation: "+tab)
	assert.Equal(t, 1, strings.Count(out, unreachable), out)
	assert.Contains(t, out, "\nfar: "+unreachable+"\n")
	assert.Regexp(t, `far\s+-\s+-\s+-\s+fetch main: dial tcp .*… \(below\)\n`, out)

	b.Reset()
	printStatus(&b, nodes, srcs, true, now)
	assert.Regexp(t, `far\s+.*`+regexp.QuoteMeta(unreachable)+`\n`, b.String(), "-o wide shows it whole in the table")
}
