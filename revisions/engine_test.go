package revisions_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/boltstore"
	"github.com/legate-dev/legate/sources"
)

const (
	ldsType = "type.googleapis.com/envoy.config.listener.v3.Listener"
	cdsType = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	node    = "edge"
)

// recordingPublisher is a test double of the Publisher interface: it keeps
// every publication and can refuse some.
type recordingPublisher struct {
	mu     sync.Mutex
	pubs   []revisions.Publication
	nodes  []string
	refuse func(node string, p revisions.Publication) error
}

func (p *recordingPublisher) Publish(node string, pub revisions.Publication) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refuse != nil {
		if err := p.refuse(node, pub); err != nil {
			return err
		}
	}
	p.pubs = append(p.pubs, pub)
	p.nodes = append(p.nodes, node)
	return nil
}

func (p *recordingPublisher) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pubs)
}

func (p *recordingPublisher) last(t *testing.T) revisions.Publication {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	require.NotEmpty(t, p.pubs, "nothing published")
	return p.pubs[len(p.pubs)-1]
}

// fakeClock is k8s.io/utils/clock's fake whose Step returns the new time,
// which the tests hand to Tick.
type fakeClock struct{ *clocktesting.FakeClock }

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{clocktesting.NewFakeClock(t)} }

func (c *fakeClock) Step(d time.Duration) time.Time {
	c.FakeClock.Step(d)
	return c.Now()
}

// harness is an engine on a real bolt store with a recording publisher, a
// fake clock and a subscriber that records outcomes.
type harness struct {
	t        *testing.T
	dir      string
	store    *boltstore.Store
	pub      *recordingPublisher
	clock    *fakeClock
	reg      *prometheus.Registry
	e        *revisions.Engine
	mu       sync.Mutex
	outcomes []revisions.Outcome
}

func newHarness(t *testing.T, opts revisions.Options) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), pub: &recordingPublisher{}, clock: newFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
	h.open(opts)
	return h
}

// open starts an engine on h.dir, as a process start would.
func (h *harness) open(opts revisions.Options) {
	t := h.t
	t.Helper()
	st, err := boltstore.Open(h.dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	h.store = st
	h.reg = prometheus.NewRegistry()
	opts.Store, opts.Publisher, opts.Clock, opts.Registerer = st, h.pub, h.clock, h.reg
	e, err := revisions.New(opts)
	require.NoError(t, err)
	e.Subscribe(func(o revisions.Outcome) {
		_, _ = e.Node(o.Node) // subscribers may read the engine
		h.mu.Lock()
		defer h.mu.Unlock()
		h.outcomes = append(h.outcomes, o)
	})
	require.NoError(t, e.Restore(context.Background()))
	h.e = e
}

// restart closes the store and opens a new engine on it; the new
// publisher refuses what the old one did.
func (h *harness) restart(opts revisions.Options) {
	require.NoError(h.t, h.store.Close())
	h.pub = &recordingPublisher{refuse: h.pub.refuse}
	h.open(opts)
}

func (h *harness) apply(cfg *render.NodeConfig, commit string) {
	h.t.Helper()
	require.NoError(h.t, h.e.Apply(context.Background(), node, cfg, gitOrigin(commit)))
}

func (h *harness) events(evs ...revisions.ProxyEvent) {
	for _, ev := range evs {
		if ev.Node == "" {
			ev.Node = node
		}
		h.e.ObserveProxy(ev)
	}
	revisions.Drain(h.e)
}

func (h *harness) status() revisions.NodeStatus {
	h.t.Helper()
	s, ok := h.e.Node(node)
	require.True(h.t, ok, "node %s unknown", node)
	return s
}

func (h *harness) lastOutcome() revisions.Outcome {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	require.NotEmpty(h.t, h.outcomes)
	return h.outcomes[len(h.outcomes)-1]
}

func (h *harness) outcomeStatuses() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, o := range h.outcomes {
		out = append(out, string(o.Status)+":"+o.Origin.Commit)
	}
	return out
}

func (h *harness) metric(name string) float64 {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	require.NoError(h.t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			total := 0.0
			for _, m := range mf.GetMetric() {
				total += m.GetCounter().GetValue()
			}
			return total
		}
	}
	return 0
}

func connect(p string) revisions.ProxyEvent {
	return revisions.ProxyEvent{Kind: revisions.ProxyConnected, Proxy: p}
}

func disconnect(p string) revisions.ProxyEvent {
	return revisions.ProxyEvent{Kind: revisions.ProxyDisconnected, Proxy: p}
}

func ack(p string, pub revisions.Publication) revisions.ProxyEvent {
	return revisions.ProxyEvent{Kind: revisions.ProxyACK, Proxy: p, SnapshotVersion: pub.Version, TypeURL: cdsType}
}

func nack(p string, pub revisions.Publication, msg string) revisions.ProxyEvent {
	return revisions.ProxyEvent{Kind: revisions.ProxyNACK, Proxy: p, SnapshotVersion: pub.Version, TypeURL: cdsType, Error: msg}
}

func gitOrigin(commit string) sources.Origin {
	return sources.Origin{Kind: sources.KindGit, Source: "config", URL: "file:///repo", Ref: "main", Commit: commit}
}

// config builds a node config of one listener and one cluster whose bodies
// are the given strings; the hashes follow the content.
func config(listener, cluster string) *render.NodeConfig {
	set := func(name, body string) render.TypeSet {
		sum := sha256.Sum256([]byte(name + "\x00" + body))
		return render.TypeSet{Hash: hex.EncodeToString(sum[:]), Resources: []render.Resource{{Name: name, Body: []byte(body)}}}
	}
	cfg := &render.NodeConfig{NodeID: node, Types: map[string]render.TypeSet{
		ldsType: set("listener", listener),
		cdsType: set("cluster", cluster),
	}}
	sum := sha256.Sum256([]byte(cfg.Types[ldsType].Hash + cfg.Types[cdsType].Hash))
	cfg.Hash = hex.EncodeToString(sum[:])
	return cfg
}

func TestApplyPublishesAndGoesInSync(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	c1 := config("l1", "c1")
	h.apply(c1, "sha1")

	pub := h.pub.last(t)
	assert.Equal(t, c1.Hash[:12]+"-1", pub.Version)
	assert.Equal(t, c1.Types[cdsType].Resources, pub.Types[cdsType].Resources)
	assert.Equal(t, revisions.StatePending, h.status().State)
	assert.Equal(t, "published; no proxy of this node is connected yet", h.lastOutcome().Description)

	h.events(connect("pod-a"), connect("pod-b"), ack("pod-a", pub))
	assert.Equal(t, revisions.StatePending, h.status().State, "pod-b has not answered")
	h.events(ack("pod-b", pub))

	s := h.status()
	assert.Equal(t, revisions.StateInSync, s.State)
	require.NotNil(t, s.Published)
	assert.Equal(t, revisions.PublishedStatus{
		Hash: c1.Hash, Version: pub.Version, Commit: "sha1", Revision: "main@sha1:sha1", Source: "config",
	}, *s.Published)
	assert.Equal(t, revisions.AnswerCounts{Connected: 2, Accepted: 2}, s.Answers)
	assert.Equal(t, []string{"pending:sha1", "success:sha1"}, h.outcomeStatuses())
	assert.InDelta(t, 1.0, h.metric("legate_revisions_revisions_total"), 0)
	assert.InDelta(t, 1.0, h.metric("legate_revisions_publishes_total"), 0)

	h.apply(config("l1", "c2"), "sha2")
	assert.Equal(t, "published, waiting for the 2 connected proxies to answer", h.lastOutcome().Description)
}

func TestRejectionTaintsAndRollsBackUnderFreshVersions(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	h.apply(config("l1", "c1"), "sha1")
	p1 := h.pub.last(t)
	h.events(connect("pod-a"), ack("pod-a", p1))
	require.Equal(t, revisions.StateInSync, h.status().State)

	c2 := config("l1", "c2-bad")
	h.apply(c2, "sha2")
	p2 := h.pub.last(t)
	assert.Equal(t, p1.Types[ldsType].Version, p2.Types[ldsType].Version, "unchanged listeners keep their version")
	assert.NotEqual(t, p1.Types[cdsType].Version, p2.Types[cdsType].Version)

	h.events(nack("pod-a", p2, "cluster type STATIC_DNS not supported"))

	p3 := h.pub.last(t)
	require.Equal(t, 3, h.pub.count(), "the rollback is published")
	assert.Equal(t, p1.Types[cdsType].Resources, p3.Types[cdsType].Resources, "the last good content is served again")
	assert.NotEqual(t, p1.Version, p3.Version)
	assert.NotEqual(t, p2.Version, p3.Version)
	for url := range p3.Types {
		assert.NotEqual(t, p1.Types[url].Version, p3.Types[url].Version, "type %s must get a fresh version", url)
		assert.NotEqual(t, p2.Types[url].Version, p3.Types[url].Version, "type %s must get a fresh version", url)
	}

	s := h.status()
	assert.Equal(t, revisions.StateRollback, s.State)
	assert.Equal(t, "sha1", s.Published.Commit)
	require.Len(t, s.History, 2)
	assert.Equal(t, c2.Hash, s.History[0].Hash)
	assert.True(t, s.History[0].Tainted)
	require.NotNil(t, s.History[0].Taint)
	assert.Equal(t, []revisions.ProxyRejection{{Proxy: "pod-a", Error: "cluster type STATIC_DNS not supported"}}, s.History[0].Taint.Proxies)
	assert.Contains(t, s.History[0].Taint.Message, "cluster type STATIC_DNS not supported")
	assert.False(t, s.History[1].Tainted)

	o := h.lastOutcome()
	assert.Equal(t, revisions.OutcomeFailure, o.Status)
	assert.Equal(t, "sha2", o.Origin.Commit)
	assert.Equal(t, revisions.StateRollback, o.State)
	assert.Contains(t, o.Description, "cluster type STATIC_DNS not supported")
	assert.InDelta(t, 1.0, h.metric("legate_revisions_taints_total"), 0)
	assert.InDelta(t, 1.0, h.metric("legate_revisions_rollbacks_total"), 0)

	// The rolled-back publication is judged like any other.
	h.events(ack("pod-a", p3))
	assert.Equal(t, revisions.StateRollback, h.status().State)

	// A new good revision brings the node back in sync by itself.
	h.apply(config("l1", "c3"), "sha3")
	p4 := h.pub.last(t)
	h.events(ack("pod-a", p4))
	assert.Equal(t, revisions.StateInSync, h.status().State)
	assert.Equal(t, "sha3", h.status().Published.Commit)
	assert.Equal(t, p3.Types[ldsType].Version, p4.Types[ldsType].Version, "after the rollback, unchanged listeners keep the rollback's version")
}

func TestDegradedDoesNotRollBack(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	h.apply(config("l1", "c1"), "sha1")
	h.events(connect("pod-a"), connect("pod-b"), ack("pod-a", h.pub.last(t)), ack("pod-b", h.pub.last(t)))
	h.apply(config("l1", "c2"), "sha2")
	p2 := h.pub.last(t)
	h.events(nack("pod-a", p2, "grpc cannot do this"), ack("pod-b", p2))

	s := h.status()
	assert.Equal(t, revisions.StateDegraded, s.State)
	assert.Equal(t, 2, h.pub.count(), "no rollback below the threshold")
	assert.False(t, s.History[0].Tainted)
	assert.Equal(t, revisions.AnswerCounts{Connected: 2, Accepted: 1, Rejected: 1}, s.Answers)
	o := h.lastOutcome()
	assert.Equal(t, revisions.OutcomeSuccess, o.Status)
	assert.Contains(t, o.Description, "grpc cannot do this")

	// The second proxy leaves and a new one connects and rejects too: now
	// every proxy there rejected it.
	h.events(disconnect("pod-b"), connect("pod-c"), nack("pod-c", p2, "no"))
	assert.Equal(t, revisions.StateRollback, h.status().State)
	assert.Equal(t, 3, h.pub.count())
}

func TestThresholdBelowOne(t *testing.T) {
	h := newHarness(t, revisions.Options{Threshold: 0.5})
	h.apply(config("l1", "c1"), "sha1")
	h.events(connect("pod-a"), connect("pod-b"), ack("pod-a", h.pub.last(t)), ack("pod-b", h.pub.last(t)))
	h.apply(config("l1", "c2"), "sha2")
	p2 := h.pub.last(t)
	h.events(nack("pod-a", p2, "bad"), ack("pod-b", p2))
	assert.Equal(t, revisions.StateRollback, h.status().State)
}

func TestTimeoutJudgesSilentProxies(t *testing.T) {
	tests := []struct {
		name      string
		threshold float64
		want      revisions.State
	}{
		{"default threshold degrades", 1, revisions.StateDegraded},
		{"half threshold taints", 0.5, revisions.StateRollback},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, revisions.Options{Threshold: tt.threshold, Timeout: 30 * time.Second})
			h.apply(config("l1", "c1"), "sha1")
			h.events(connect("pod-a"), ack("pod-a", h.pub.last(t)))
			h.apply(config("l1", "c2"), "sha2")
			p2 := h.pub.last(t)
			h.events(connect("pod-silent"), nack("pod-a", p2, "bad"))
			require.Equal(t, revisions.StatePending, h.status().State)

			h.e.Tick(context.Background(), h.clock.Step(29*time.Second))
			assert.Equal(t, revisions.StatePending, h.status().State, "before the timeout")
			h.e.Tick(context.Background(), h.clock.Step(time.Second))
			assert.Equal(t, tt.want, h.status().State, "at the timeout")
		})
	}
}

// A Tick during shutdown judges nothing: its context ended, so no
// verdict (and no store write or commit status) starts.
func TestTickHonoursShutdown(t *testing.T) {
	h := newHarness(t, revisions.Options{Timeout: 30 * time.Second})
	h.apply(config("l1", "c1"), "sha1")
	h.events(connect("pod-a"), ack("pod-a", h.pub.last(t)))
	h.apply(config("l1", "c2"), "sha2")
	h.events(connect("pod-silent"), nack("pod-a", h.pub.last(t), "bad"))
	require.Equal(t, revisions.StatePending, h.status().State)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h.e.Tick(ctx, h.clock.Step(time.Minute))
	assert.Equal(t, revisions.StatePending, h.status().State, "no verdict during shutdown")
	h.e.Tick(context.Background(), h.clock.Now())
	assert.Equal(t, revisions.StateDegraded, h.status().State, "the same tick without shutdown judges the silent proxy")
}

func TestAllTaintedIsRollbackFailedUntilCleared(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	c1 := config("l1", "c1")
	h.apply(c1, "sha1")
	p1 := h.pub.last(t)
	h.events(connect("pod-a"), nack("pod-a", p1, "nope"))

	s := h.status()
	assert.Equal(t, revisions.StateRollbackFailed, s.State)
	assert.Equal(t, 1, h.pub.count(), "nothing else to publish")
	assert.Equal(t, c1.Hash, s.Published.Hash, "the publication in place stays")

	require.NoError(t, h.e.ClearTaint(context.Background(), node, c1.Hash))
	require.Equal(t, 2, h.pub.count(), "clearing re-publishes")
	p2 := h.pub.last(t)
	assert.NotEqual(t, p1.Types[cdsType].Version, p2.Types[cdsType].Version, "under fresh versions")
	assert.False(t, h.status().History[0].Tainted)
	h.events(ack("pod-a", p2))
	assert.Equal(t, revisions.StateInSync, h.status().State)

	err := h.e.ClearTaint(context.Background(), node, "nope")
	require.ErrorIs(t, err, revisions.ErrNotFound)
}

func TestSameContentIsSameRevision(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	a, b := config("l1", "a"), config("l1", "b")
	h.apply(a, "sha1")
	pa := h.pub.last(t)
	h.events(connect("pod-a"), ack("pod-a", pa))
	h.apply(b, "sha2")
	h.events(ack("pod-a", h.pub.last(t)))

	h.apply(a, "sha3") // a revert commit
	s := h.status()
	require.Len(t, s.History, 2, "no new revision for known content")
	assert.Equal(t, a.Hash, s.History[0].Hash, "re-applied content moves to the top")
	assert.Equal(t, "sha3", s.History[0].Commit, "and records the newer commit")
	assert.InDelta(t, 2.0, h.metric("legate_revisions_revisions_total"), 0)
	pa2 := h.pub.last(t)
	assert.Equal(t, 3, h.pub.count())
	assert.Equal(t, pa.Types[ldsType].Version, pa2.Types[ldsType].Version)

	// Applying what is already served publishes nothing and reports where
	// it stands.
	h.events(ack("pod-a", pa2))
	h.apply(a, "sha4")
	assert.Equal(t, 3, h.pub.count())
	assert.Equal(t, revisions.StateInSync, h.status().State)
	assert.Equal(t, "success:sha4", h.outcomeStatuses()[len(h.outcomeStatuses())-1])
}

func TestReapplyingTaintedContentPublishesNothing(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	h.apply(config("l1", "good"), "sha1")
	h.events(connect("pod-a"), ack("pod-a", h.pub.last(t)))
	bad := config("l1", "bad")
	h.apply(bad, "sha2")
	h.events(nack("pod-a", h.pub.last(t), "broken"))
	n := h.pub.count()

	h.apply(bad, "sha5")
	assert.Equal(t, n, h.pub.count())
	s := h.status()
	assert.Equal(t, revisions.StateRollback, s.State)
	assert.Equal(t, bad.Hash, s.History[0].Hash)
	o := h.lastOutcome()
	assert.Equal(t, revisions.OutcomeFailure, o.Status)
	assert.Equal(t, "sha5", o.Origin.Commit)
	assert.Contains(t, o.Description, "broken")
}

func TestRefusedPublicationIsTainted(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	h.apply(config("l1", "good"), "sha1")
	h.pub.refuse = func(_ string, p revisions.Publication) error {
		if len(p.Types[cdsType].Resources) > 0 && string(p.Types[cdsType].Resources[0].Body) == "dangling" {
			return errors.New("route refers to missing cluster")
		}
		return nil
	}
	h.apply(config("l1", "dangling"), "sha2")

	s := h.status()
	assert.Equal(t, revisions.StateRollback, s.State)
	assert.Equal(t, "sha1", s.Published.Commit)
	assert.True(t, s.History[0].Tainted)
	assert.Contains(t, s.History[0].Taint.Message, "route refers to missing cluster")
	assert.Equal(t, 1, h.pub.count(), "the served revision stays in place")
	o := h.lastOutcome()
	assert.Equal(t, revisions.OutcomeFailure, o.Status)
	assert.Equal(t, "sha2", o.Origin.Commit)
}

// A publication the home cannot serve yet (NotReady: a secret that does
// not exist yet) waits instead of being tainted: the last good revision
// stays served, the wait is reported once, and a tick serves it as soon as
// the home can.
func TestNotReadyPublicationWaitsAndIsRetried(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	h.apply(config("l1", "good"), "sha1")
	p1 := h.pub.last(t)
	h.events(connect("pod-a"), ack("pod-a", p1))
	require.Equal(t, revisions.StateInSync, h.status().State)

	ready := false
	h.pub.refuse = func(_ string, p revisions.Publication) error {
		if !ready && string(p.Types[cdsType].Resources[0].Body) == "needs-secret" {
			return revisions.NotReady(errors.New(`secret "cert" (ref "cert"): read /s/cert/tls.crt: no such file`))
		}
		return nil
	}
	c2 := config("l1", "needs-secret")
	h.apply(c2, "sha2")

	s := h.status()
	assert.Equal(t, revisions.StatePending, s.State, "the newest revision is not served yet")
	assert.Equal(t, "sha1", s.Published.Commit, "the last good revision stays served")
	assert.False(t, s.History[0].Tainted, "waiting is not a taint")
	require.NotNil(t, s.Waiting)
	assert.Equal(t, c2.Hash, s.Waiting.Hash)
	assert.Equal(t, "sha2", s.Waiting.Commit)
	assert.Contains(t, s.Waiting.Message, "tls.crt: no such file")
	since := s.Waiting.Since
	assert.Equal(t, 1, h.pub.count())
	o := h.lastOutcome()
	assert.Equal(t, revisions.OutcomePending, o.Status)
	assert.Equal(t, "sha2", o.Origin.Commit)
	assert.Contains(t, o.Description, "waiting to be served: ")
	assert.True(t, o.Waiting)
	assert.InDelta(t, 0.0, h.metric("legate_revisions_taints_total"), 0)

	h.clock.Step(time.Second)
	h.e.Tick(context.Background(), h.clock.Now())
	s = h.status()
	require.NotNil(t, s.Waiting, "still not ready")
	assert.Equal(t, since, s.Waiting.Since, "the same wait keeps its start")
	assert.Equal(t, []string{"pending:sha1", "success:sha1", "pending:sha2"}, h.outcomeStatuses(), "the same wait is reported once")

	ready = true
	h.clock.Step(time.Second)
	h.e.Tick(context.Background(), h.clock.Now())
	s = h.status()
	assert.Nil(t, s.Waiting)
	assert.Equal(t, "sha2", s.Published.Commit)
	p2 := h.pub.last(t)
	h.events(ack("pod-a", p2))
	assert.Equal(t, revisions.StateInSync, h.status().State)
	assert.Equal(t, []string{"pending:sha1", "success:sha1", "pending:sha2", "pending:sha2", "success:sha2"}, h.outcomeStatuses())

	// The publication survives a restart: it was stored when the tick made it.
	h.restart(revisions.Options{})
	assert.Equal(t, "sha2", h.status().Published.Commit)
}

// A newer revision that can be served replaces the one waiting; a node
// whose very first revision waits serves nothing and is Pending.
func TestWaitingRevisionIsSupersededAndFirstRevisionWaits(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	h.pub.refuse = func(_ string, p revisions.Publication) error {
		if string(p.Types[cdsType].Resources[0].Body) == "needs-secret" {
			return revisions.NotReady(errors.New("secret missing"))
		}
		return nil
	}
	h.apply(config("l1", "needs-secret"), "sha1")
	s := h.status()
	assert.Nil(t, s.Published)
	assert.Equal(t, revisions.StatePending, s.State)
	require.NotNil(t, s.Waiting)
	assert.Equal(t, 0, h.pub.count())

	h.apply(config("l1", "plain"), "sha2")
	s = h.status()
	assert.Nil(t, s.Waiting, "the newest revision is served; nothing waits")
	assert.Equal(t, "sha2", s.Published.Commit)
	assert.Equal(t, s.Published.Version, h.pub.last(t).Version)

	// Restarting with content that waits serves nothing until it is ready.
	h.apply(config("l1", "needs-secret"), "sha3")
	require.NotNil(t, h.status().Waiting)
	assert.Equal(t, "sha2", h.status().Published.Commit)
	h.restart(revisions.Options{})
	s = h.status()
	require.NotNil(t, s.Waiting, "after a restart the newest revision still waits")
	assert.Equal(t, "sha3", s.Waiting.Commit)
	assert.False(t, s.History[0].Tainted)
	require.NotNil(t, s.Published, "a restart never leaves the proxies without config")
	assert.Equal(t, "sha2", s.Published.Commit, "the newest revision that can be served is, meanwhile")
	assert.Equal(t, revisions.StatePending, s.State)
	assert.False(t, s.History[1].Tainted)

	h.pub.mu.Lock()
	h.pub.refuse = nil
	h.pub.mu.Unlock()
	h.e.Tick(context.Background(), h.clock.Now())
	s = h.status()
	assert.Nil(t, s.Waiting)
	assert.Equal(t, "sha3", s.Published.Commit)
}

func TestHistoryIsBounded(t *testing.T) {
	h := newHarness(t, revisions.Options{History: 3})
	var last *render.NodeConfig
	for i := range 6 {
		last = config("l", string(rune('a'+i)))
		h.apply(last, "sha")
	}
	s := h.status()
	require.Len(t, s.History, 3)
	assert.Equal(t, last.Hash, s.History[0].Hash)

	data, err := h.store.Load(context.Background())
	require.NoError(t, err)
	require.Len(t, data, 1)
	assert.Len(t, data[0].Revisions, 3, "pruned revisions are deleted from the store")
	assert.Len(t, data[0].Record.History, 3)
}

func TestRestoreRepublishesLastGoodNeverTainted(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	good := config("l1", "good")
	h.apply(good, "sha1")
	h.events(connect("pod-a"), ack("pod-a", h.pub.last(t)))
	h.apply(config("l1", "bad"), "sha2")
	h.events(nack("pod-a", h.pub.last(t), "broken"))
	before := h.pub.last(t)

	h.restart(revisions.Options{})
	require.Equal(t, 1, h.pub.count(), "restore publishes before any fetch")
	p := h.pub.last(t)
	assert.Equal(t, good.Types[cdsType].Resources, p.Types[cdsType].Resources, "the last good revision, not the tainted one")
	assert.NotEqual(t, before.Version, p.Version, "under a fresh version")
	s := h.status()
	assert.Equal(t, revisions.StateRollback, s.State)
	assert.True(t, s.History[0].Tainted, "taints survive restarts")
	assert.Equal(t, "broken", s.History[0].Taint.Proxies[0].Error)
	assert.Equal(t, "sha1", s.Published.Commit)

	// After the restart the engine goes on as before.
	h.events(connect("pod-a"), ack("pod-a", p))
	h.apply(config("l1", "fixed"), "sha3")
	h.events(ack("pod-a", h.pub.last(t)))
	assert.Equal(t, revisions.StateInSync, h.status().State)
}

func TestRestoreLeavesAllTaintedNodeUnpublished(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	h.apply(config("l1", "bad"), "sha1")
	h.events(connect("pod-a"), nack("pod-a", h.pub.last(t), "broken"))
	require.Equal(t, revisions.StateRollbackFailed, h.status().State)

	h.restart(revisions.Options{})
	assert.Zero(t, h.pub.count(), "a tainted revision is never re-published")
	s := h.status()
	assert.Equal(t, revisions.StateRollbackFailed, s.State)
	assert.Nil(t, s.Published)
}

func TestValidationFailureIsReportedAndPublishesNothing(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	h.e.RecordValidationFailure(gitOrigin("sha9"), []render.Diagnostic{
		{Pos: render.Position{File: "clusters.yaml", Line: 3, Column: 5}, Rule: "pgv", Message: "value must be greater than 0"},
		{Pos: render.Position{File: "routes.yaml", Line: 1}, Rule: "reference", Message: "unknown cluster \"x\""},
	})
	assert.Zero(t, h.pub.count())
	o := h.lastOutcome()
	assert.Equal(t, revisions.OutcomeFailure, o.Status)
	assert.Equal(t, "sha9", o.Origin.Commit)
	assert.Equal(t, `validation failed with 2 problems; clusters.yaml:3:5: value must be greater than 0 [pgv]; routes.yaml:1: unknown cluster "x" [reference]`, o.Description)
	assert.Empty(t, h.e.Nodes())
}

// The summary names files from the repository root, as the author sees
// them, when the source reads a directory of it.
func TestValidationFailureNamesRepositoryPaths(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	diags := []render.Diagnostic{
		{Pos: render.Position{File: "nodes/edge/cluster.yaml", Line: 3, Column: 1}, Message: "unknown field", Rule: "decode"},
		{Pos: render.Position{File: "b.yaml", Line: 1}, Message: "x"},
		{Pos: render.Position{File: "c.yaml"}, Message: "y"},
		{Pos: render.Position{File: "d.yaml"}, Message: "z"},
	}
	o := gitOrigin("sha9")
	o.Path = "envoy"
	h.e.RecordValidationFailure(o, diags)
	assert.Equal(t, "validation failed with 4 problems; envoy/nodes/edge/cluster.yaml:3:1: unknown field [decode]; envoy/b.yaml:1: x; envoy/c.yaml: y; and 1 more", h.lastOutcome().Description)
	o.Path = "."
	h.e.RecordValidationFailure(o, diags[:1])
	assert.Equal(t, "validation failed with 1 problem; nodes/edge/cluster.yaml:3:1: unknown field [decode]", h.lastOutcome().Description)
	o.Path = "/envoy/"
	h.e.RecordValidationFailure(o, []render.Diagnostic{{Message: "no file"}})
	assert.Equal(t, "validation failed with 1 problem; : no file", h.lastOutcome().Description, "a diagnostic without a file gets no directory")
}

func TestNodeStatusJSON(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	h.apply(config("l1", "good"), "sha1")
	h.events(connect("pod-a"), nack("pod-a", h.pub.last(t), "broken"))
	raw, err := json.Marshal(h.e.Nodes())
	require.NoError(t, err)

	var got []map[string]any
	require.NoError(t, json.Unmarshal(raw, &got))
	require.Len(t, got, 1)
	assert.Equal(t, node, got[0]["nodeID"])
	assert.Equal(t, "RollbackFailed", got[0]["state"])
	pub := got[0]["published"].(map[string]any)
	assert.Equal(t, "main@sha1:sha1", pub["revision"])
	assert.Contains(t, pub, "version")
	hist := got[0]["history"].([]any)[0].(map[string]any)
	for _, k := range []string{"hash", "commit", "revision", "createdAt", "publishedAt", "tainted", "taint"} {
		assert.Contains(t, hist, k)
	}
	taint := hist["taint"].(map[string]any)
	assert.Contains(t, taint, "at")
	assert.Equal(t, []any{map[string]any{"proxy": "pod-a", "error": "broken"}}, taint["proxies"])
}

func TestRunAppliesEventsAndTimeouts(t *testing.T) {
	h := newHarness(t, revisions.Options{TickInterval: time.Millisecond, Timeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.ErrorIs(t, <-done, context.Canceled)
	})

	h.apply(config("l1", "c1"), "sha1")
	p := h.pub.last(t)
	h.e.ObserveProxy(revisions.ProxyEvent{Kind: revisions.ProxyConnected, Node: node, Proxy: "pod-a"})
	h.e.ObserveProxy(revisions.ProxyEvent{Kind: revisions.ProxyConnected, Node: node, Proxy: "pod-b"})
	h.e.ObserveProxy(revisions.ProxyEvent{Kind: revisions.ProxyACK, Node: node, Proxy: "pod-a", SnapshotVersion: p.Version})
	require.Eventually(t, func() bool {
		s, _ := h.e.Node(node)
		return s.Answers.Accepted == 1
	}, 5*time.Second, time.Millisecond)
	assert.Equal(t, revisions.StatePending, h.status().State)

	h.clock.Step(time.Minute)
	require.Eventually(t, func() bool {
		s, _ := h.e.Node(node)
		return s.State == revisions.StateInSync
	}, 5*time.Second, time.Millisecond, "the ticker judges after the timeout")
}

func TestNodeStateGauge(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	h.apply(config("l1", "c1"), "sha1")
	h.events(connect("pod-a"), nack("pod-a", h.pub.last(t), "x"))
	mfs, err := h.reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "legate_revisions_node_state" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			got[labels["state"]] = m.GetGauge().GetValue()
		}
	}
	assert.Equal(t, map[string]float64{"Pending": 0, "InSync": 0, "Degraded": 0, "Rollback": 0, "RollbackFailed": 1, "Progressing": 0}, got)
}

func TestRemovedTypeIsPublishedEmpty(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	h.apply(config("l1", "c1"), "sha1")
	p1 := h.pub.last(t)
	only := config("l2", "unused")
	delete(only.Types, cdsType)
	only.Hash = "listeners-only-hash"
	h.apply(only, "sha2")
	p2 := h.pub.last(t)
	require.Contains(t, p2.Types, cdsType, "a type published before stays")
	assert.Empty(t, p2.Types[cdsType].Resources)
	assert.NotEqual(t, p1.Types[cdsType].Version, p2.Types[cdsType].Version)
}

func TestProxiesConnectedBeforeTheFirstRevision(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	h.events(connect("pod-a"))
	assert.Empty(t, h.e.Nodes(), "a node without revisions is not listed")
	h.apply(config("l1", "c1"), "sha1")
	h.events(ack("pod-a", h.pub.last(t)))
	assert.Equal(t, revisions.StateInSync, h.status().State)
}

// TestProxyCurrentWithoutAResponse: the xDS server reports a proxy whose
// subscriptions a publication does not touch as current with an ACK that
// names no type; the engine counts it as accepting.
func TestProxyCurrentWithoutAResponse(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	h.apply(config("l1", "c1"), "sha1")
	h.events(connect("cds-only"), ack("cds-only", h.pub.last(t)))
	require.Equal(t, revisions.StateInSync, h.status().State)

	h.apply(config("l2", "c1"), "sha2")
	p2 := h.pub.last(t)
	require.Equal(t, revisions.StatePending, h.status().State)
	h.events(revisions.ProxyEvent{Kind: revisions.ProxyACK, Proxy: "cds-only", SnapshotVersion: p2.Version})
	s := h.status()
	assert.Equal(t, revisions.StateInSync, s.State)
	assert.Equal(t, "sha2", s.Published.Commit)
	assert.Equal(t, []string{"pending:sha1", "success:sha1", "pending:sha2", "success:sha2"}, h.outcomeStatuses())
}

// TestPublicationCarriesExternalSecrets checks that the home learns which
// secrets and endpoints to supply, also after a restart restores the
// revision from the store.
func TestPublicationCarriesExternalSecrets(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	c := config("l1", "c1")
	c.ExternalSecrets = []render.ExternalSecret{{Name: "edge-cert", Ref: "web/edge-cert", Kind: "tls", Source: render.Position{File: "envoy.yaml", Line: 3}}}
	c.ExternalEndpoints = []render.ExternalEndpoints{{ClusterName: "api", Namespace: "web", Selector: "app=api", TargetPort: "http", Source: render.Position{File: "envoy.yaml", Line: 9}}}
	c.Hash = render.HashNode(c)
	h.apply(c, "sha1")
	assert.Equal(t, c.ExternalSecrets, h.pub.last(t).ExternalSecrets)
	assert.Equal(t, c.ExternalEndpoints, h.pub.last(t).ExternalEndpoints)

	h.restart(revisions.Options{})
	assert.Equal(t, c.ExternalSecrets, h.pub.last(t).ExternalSecrets, "restored from the store")
	assert.Equal(t, c.ExternalEndpoints, h.pub.last(t).ExternalEndpoints, "restored from the store")
}

// A subscriber that reads the engine while another goroutine waits for the
// engine's lock must not deadlock: Apply delivers its outcomes while Tick
// runs in a loop beside it, as Run does every TickInterval.
func TestSubscriberReadingTheEngineWhileTicking(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	stop := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		for {
			select {
			case <-stop:
				return
			default:
				h.e.Tick(context.Background(), h.clock.Now())
			}
		}
	}()
	applied := make(chan struct{})
	go func() {
		defer close(applied)
		for i := range 300 {
			cfg := config("l1", fmt.Sprintf("c%d", i%7))
			if err := h.e.Apply(context.Background(), node, cfg, gitOrigin(fmt.Sprintf("sha%d", i))); err != nil {
				t.Errorf("apply %d: %v", i, err)
				return
			}
		}
	}()
	select {
	case <-applied:
	case <-time.After(time.Minute):
		close(stop)
		t.Fatal("Apply and Tick deadlocked with a subscriber that reads the engine")
	}
	close(stop)
	<-ticked
	assert.Equal(t, "pending:sha299", h.outcomeStatuses()[len(h.outcomeStatuses())-1])
}

// A revision in the store that the node's history does not name (left by
// an interrupted prune, for example) is deleted on restore, and the
// history is kept.
func TestRestoreDropsOrphanRevisions(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	h.apply(config("l1", "c1"), "sha1")
	data, err := h.store.Load(context.Background())
	require.NoError(t, err)
	require.Len(t, data, 1)
	kept := data[0].Record.History
	require.Len(t, kept, 1)

	orphan := &revisions.Revision{Hash: config("l9", "c9").Hash, Config: config("l9", "c9"), Origin: gitOrigin("sha9"), CreatedAt: h.clock.Now()}
	orphan.Node = data[0].Record.Node
	rec := data[0].Record
	rec.Revision++
	require.NoError(t, h.store.Commit(context.Background(), revisions.Update{Record: rec, Put: []*revisions.Revision{orphan}}))
	data, err = h.store.Load(context.Background())
	require.NoError(t, err)
	require.Len(t, data[0].Revisions, 2, "the orphan is stored")

	h.restart(revisions.Options{})
	data, err = h.store.Load(context.Background())
	require.NoError(t, err)
	require.Len(t, data, 1)
	assert.Equal(t, kept, data[0].Record.History)
	require.Len(t, data[0].Revisions, 1, "the orphan was deleted")
	assert.Equal(t, kept[0], data[0].Revisions[0].Hash)
}

// A history of one revision is allowed (only the served one is kept); less
// is refused with the setting named.
func TestHistoryBounds(t *testing.T) {
	h := newHarness(t, revisions.Options{History: 1})
	h.apply(config("l1", "c1"), "sha1")
	h.apply(config("l1", "c2"), "sha2")
	assert.Len(t, h.status().History, 1)

	_, err := revisions.New(revisions.Options{Store: h.store, Publisher: h.pub, History: -1})
	assert.ErrorContains(t, err, "history must be at least 1, got -1")
}
