package main

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/pipeline/nodestate"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/statuspage"
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
