package main

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/standalone"
)

func TestPrintStatusShowsTaintsAndWaits(t *testing.T) {
	since := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	nodes := []standalone.NodeView{{NodeStatus: revisions.NodeStatus{
		NodeID:    "edge",
		State:     revisions.StatePending,
		Published: &revisions.PublishedStatus{Hash: "aaaaaaaaaaaaaaaa", Commit: "1111111111111111"},
		History: []revisions.RevisionStatus{
			{Hash: "cccccccccccccccc", Commit: "3333333333333333"},
			{Hash: "bbbbbbbbbbbbbbbb", Commit: "2222222222222222", Tainted: true, Taint: &revisions.Taint{Message: "rejected by 1 of 1 proxies"}},
			{Hash: "aaaaaaaaaaaaaaaa", Commit: "1111111111111111"},
		},
		Waiting: &revisions.WaitingStatus{Hash: "cccccccccccccccc", Commit: "3333333333333333", Message: `secret "tls" missing`, Since: since},
	}}}
	var b strings.Builder
	printStatus(&b, nodes, []standalone.SourceStatus{{Name: "config", Revision: "main@sha1:3333", AppliedRevision: "main@sha1:2222"}})
	out := b.String()
	for _, want := range []string{
		"config  main@sha1:3333  main@sha1:2222  -",
		"edge  Pending  aaaaaaaaaaaa",
		`edge waits to serve cccccccccccc (commit 333333333333) since 2026-11-22T03:00:00Z: secret "tls" missing`,
		"bbbbbbbbbbbb  commit 222222222222  TAINTED: rejected by 1 of 1 proxies",
		"aaaaaaaaaaaa  commit 111111111111 (published)",
	} {
		assert.Contains(t, out, want)
	}
}

func TestStatusNamesTheServerItCannotReach(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there any more
	_, err = runLegate(t, "status", "--server", "http://"+addr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot reach legate serve (is it running? --server sets its HTTP address)")
	assert.Contains(t, err.Error(), addr)
}
