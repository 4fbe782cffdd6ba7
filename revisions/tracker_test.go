package revisions

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTracker(t *testing.T) {
	const v1, v0 = "pub-1", "pub-0"
	conn := func(p string) ProxyEvent { return ProxyEvent{Kind: ProxyConnected, Proxy: p} }
	disc := func(p string) ProxyEvent { return ProxyEvent{Kind: ProxyDisconnected, Proxy: p} }
	ack := func(p, v string, outstanding int) ProxyEvent {
		return ProxyEvent{Kind: ProxyACK, Proxy: p, SnapshotVersion: v, Outstanding: outstanding}
	}
	nack := func(p, v, msg string) ProxyEvent {
		return ProxyEvent{Kind: ProxyNACK, Proxy: p, SnapshotVersion: v, Error: msg}
	}
	tests := []struct {
		name     string
		events   []ProxyEvent
		want     tally
		rejected []ProxyRejection
	}{
		{"no proxies", nil, tally{}, nil},
		{"connected, silent", []ProxyEvent{conn("a"), conn("b")}, tally{Population: 2}, nil},
		{"ACK of the publication accepts", []ProxyEvent{conn("a"), ack("a", v1, 0)}, tally{Population: 1, Accepted: 1}, nil},
		{"ACK with responses outstanding does not accept yet", []ProxyEvent{conn("a"), ack("a", v1, 1)}, tally{Population: 1}, nil},
		{"later ACK clears outstanding", []ProxyEvent{conn("a"), ack("a", v1, 1), ack("a", v1, 0)}, tally{Population: 1, Accepted: 1}, nil},
		{
			"ACK without a type (the server found nothing to send) accepts",
			[]ProxyEvent{conn("a"), {Kind: ProxyACK, Proxy: "a", SnapshotVersion: v1}},
			tally{Population: 1, Accepted: 1},
			nil,
		},
		{"ACK of an older publication does not count", []ProxyEvent{conn("a"), ack("a", v0, 0)}, tally{Population: 1}, nil},
		{"NACK of an older publication does not count", []ProxyEvent{conn("a"), nack("a", v0, "old")}, tally{Population: 1}, nil},
		{
			"NACK of the publication rejects with the proxy's text",
			[]ProxyEvent{conn("a"), nack("a", v1, "bad cluster")},
			tally{Population: 1, Rejected: 1},
			[]ProxyRejection{{Proxy: "a", Error: "bad cluster"}},
		},
		{
			"NACK after ACK still rejects",
			[]ProxyEvent{conn("a"), ack("a", v1, 0), nack("a", v1, "bad listener")},
			tally{Population: 1, Rejected: 1},
			[]ProxyRejection{{Proxy: "a", Error: "bad listener"}},
		},
		{
			"first NACK text is kept",
			[]ProxyEvent{conn("a"), nack("a", v1, "first"), nack("a", v1, "second")},
			tally{Population: 1, Rejected: 1},
			[]ProxyRejection{{Proxy: "a", Error: "first"}},
		},
		{
			"rejection survives disconnect",
			[]ProxyEvent{conn("a"), conn("b"), nack("a", v1, "x"), disc("a"), ack("b", v1, 0)},
			tally{Population: 2, Accepted: 1, Rejected: 1},
			[]ProxyRejection{{Proxy: "a", Error: "x"}},
		},
		{"accepting proxy that leaves no longer counts", []ProxyEvent{conn("a"), conn("b"), ack("a", v1, 0), disc("a")}, tally{Population: 1}, nil},
		{"second stream of the same identity keeps it connected", []ProxyEvent{conn("a"), conn("a"), disc("a"), ack("a", v1, 0)}, tally{Population: 1, Accepted: 1}, nil},
		{"answer from an unknown stream is ignored", []ProxyEvent{ack("ghost", v1, 0)}, tally{}, nil},
		{
			"NACK from a stream already gone still counts",
			[]ProxyEvent{nack("gone", v1, "x")},
			tally{Population: 1, Rejected: 1},
			[]ProxyRejection{{Proxy: "gone", Error: "x"}},
		},
		{"disconnect of an unknown proxy is ignored", []ProxyEvent{disc("a")}, tally{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTracker()
			tr.reset(v1, time.Time{})
			for _, ev := range tt.events {
				tr.observe(ev)
			}
			assert.Equal(t, tt.want, tr.tally("").own)
			assert.Equal(t, tt.rejected, tr.rejections(""))
		})
	}
}

func TestTrackerReset(t *testing.T) {
	tr := newTracker()
	tr.reset("pub-1", time.Time{})
	tr.observe(ProxyEvent{Kind: ProxyConnected, Proxy: "a"})
	tr.observe(ProxyEvent{Kind: ProxyConnected, Proxy: "b"})
	tr.observe(ProxyEvent{Kind: ProxyNACK, Proxy: "a", SnapshotVersion: "pub-1", Error: "x"})
	tr.observe(ProxyEvent{Kind: ProxyNACK, Proxy: "gone", SnapshotVersion: "pub-1", Error: "y"})
	tr.observe(ProxyEvent{Kind: ProxyACK, Proxy: "b", SnapshotVersion: "pub-1"})

	tr.reset("pub-2", time.Time{})
	assert.Equal(t, tally{Population: 2}, tr.tally("").own, "answers are forgotten, connected proxies stay")
	assert.Empty(t, tr.rejections(""))
	assert.Len(t, tr.proxies, 2, "a rejecter without a stream is dropped")
	assert.Equal(t, 2, tr.connected())
}

func TestTrackerBoundsGoneRejecters(t *testing.T) {
	tr := newTracker()
	tr.reset("pub-1", time.Time{})
	for i := range 3 * maxGone {
		id := "stream-" + string(rune('a'+i%26)) + time.Duration(i).String()
		tr.observe(ProxyEvent{Kind: ProxyConnected, Proxy: id})
		tr.observe(ProxyEvent{Kind: ProxyNACK, Proxy: id, SnapshotVersion: "pub-1", Error: "x"})
		tr.observe(ProxyEvent{Kind: ProxyDisconnected, Proxy: id})
	}
	for i := range maxGone {
		tr.observe(ProxyEvent{Kind: ProxyNACK, Proxy: "late-" + time.Duration(i).String(), SnapshotVersion: "pub-1", Error: "x"})
	}
	assert.Len(t, tr.proxies, maxGone)
	assert.Equal(t, tally{Population: maxGone, Rejected: maxGone}, tr.tally("").own)

	// Reconnecting a kept rejecter frees its slot.
	var kept string
	for id := range tr.proxies {
		kept = id
		break
	}
	tr.observe(ProxyEvent{Kind: ProxyConnected, Proxy: kept})
	assert.Equal(t, maxGone-1, tr.gone)
}

// A rollout's canaries follow the verdict's rule: the owner's guests count
// only while none of its own proxies is connected.
func TestCanariesLeaveGuestsAsideWhileTheOwnerIsThere(t *testing.T) {
	tr := newTracker()
	tr.reset("stable", time.Time{})
	tr.startCandidate("cand")
	tr.observe(ProxyEvent{Kind: ProxyConnected, Proxy: "guest", Tenant: "team-a", Bucket: 5})
	tr.observe(ProxyEvent{Kind: ProxyACK, Proxy: "guest", Tenant: "team-a", SnapshotVersion: "cand"})
	tr.observe(ProxyEvent{Kind: ProxyNACK, Proxy: "guest-2", Tenant: "team-a", SnapshotVersion: "cand", Error: "forged"})

	inStep, acked, waiting, rej := tr.canaries(1000, "platform")
	assert.Equal(t, 1, inStep, "guests alone: they are the canaries")
	assert.Equal(t, 1, acked)
	assert.Empty(t, waiting)
	require.NotNil(t, rej)
	assert.Equal(t, "guest-2", rej.Proxy)

	tr.observe(ProxyEvent{Kind: ProxyConnected, Proxy: "own", Tenant: "platform", Bucket: 7})
	inStep, acked, waiting, rej = tr.canaries(1000, "platform")
	assert.Equal(t, 1, inStep, "the owner's proxy is the only canary")
	assert.Zero(t, acked)
	assert.Equal(t, "own", waiting)
	assert.Nil(t, rej, "a guest's rejection stops nothing")
}

// A replica's summary keeps the owner's own proxies apart from its guests,
// the owner's rejections first.
func TestLocalAnswersSplitGuests(t *testing.T) {
	n := &nodeState{rec: NodeRecord{Node: "edge", Owner: "envoyconfig/platform/edge"}, track: newTracker(), tenantOf: func(string) string { return "platform" }}
	n.track.reset("v1", time.Time{})
	for _, ev := range []ProxyEvent{
		{Kind: ProxyConnected, Proxy: "pod-a", Tenant: "platform"},
		{Kind: ProxyConnected, Proxy: "pod-b", Tenant: "platform"},
		{Kind: ProxyConnected, Proxy: "a-guest", Tenant: "team-a"},
		{Kind: ProxyNACK, Proxy: "pod-a", Tenant: "platform", SnapshotVersion: "v1", Error: "bad"},
		{Kind: ProxyACK, Proxy: "pod-b", Tenant: "platform", SnapshotVersion: "v1"},
		{Kind: ProxyNACK, Proxy: "a-guest", Tenant: "team-a", SnapshotVersion: "v1", Error: "forged"},
	} {
		n.track.observe(ev)
	}
	e := &Engine{nodes: map[string]*nodeState{"edge": n}}
	assert.Equal(t, map[string]RemoteAnswers{"edge": {
		Version: "v1", Population: 2, Accepted: 1, Rejected: 1,
		GuestPopulation: 1, GuestRejected: 1,
		Rejections: []ProxyRejection{{Proxy: "pod-a", Error: "bad"}, {Proxy: "a-guest", Error: "forged", Guest: true}},
	}}, e.LocalAnswers())
}

// A proxy is counted within its tenant: a guest that takes the name of one
// of the owner's proxies (the pod name is the client's own word) answers
// only for itself.
func TestGuestCannotAnswerForTheOwnersProxyByItsName(t *testing.T) {
	tr := newTracker()
	tr.reset("v1", time.Time{})
	for _, ev := range []ProxyEvent{
		{Kind: ProxyConnected, Proxy: "gw/edge-1", Tenant: "platform"},
		{Kind: ProxyConnected, Proxy: "gw/edge-1", Tenant: "team-a"},
		{Kind: ProxyNACK, Proxy: "gw/edge-1", Tenant: "platform", SnapshotVersion: "v1", Error: "bad"},
		{Kind: ProxyACK, Proxy: "gw/edge-1", Tenant: "team-a", SnapshotVersion: "v1"},
		{Kind: ProxyDisconnected, Proxy: "gw/edge-1", Tenant: "team-a"},
	} {
		tr.observe(ev)
	}
	s := tr.tally("platform")
	assert.Equal(t, tally{Population: 1, Rejected: 1}, s.own, "the guest's ACK and disconnect leave the owner's proxy as it was")
	assert.Equal(t, tally{}, s.guests)
	assert.Equal(t, []ProxyRejection{{Proxy: "gw/edge-1", Error: "bad"}}, tr.rejections("platform"))
}
