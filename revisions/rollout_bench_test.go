package revisions_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/sources"
)

// sharePublisher notes when a publication with a given candidate share
// (-1: no candidate) is handed over.
type sharePublisher struct {
	mu    sync.Mutex
	want  int
	seen  bool
	split revisions.Publication
}

func (p *sharePublisher) Publish(_ string, pub revisions.Publication) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	share := -1
	if pub.Candidate != nil {
		share = pub.CandidateShare
		p.split = pub
	}
	if share == p.want {
		p.seen = true
	}
	return nil
}

func (p *sharePublisher) expect(share int) {
	p.mu.Lock()
	p.want, p.seen = share, false
	p.mu.Unlock()
}

// rolloutAt10 is an engine with 1 000 proxies of one node (buckets 0, 10,
// …, 9 990: exactly 100 in a 10% share) and a rollout at its first step,
// the candidate served to the canaries; all but the last canary ACKed it.
func rolloutAt10(b *testing.B) (*revisions.Engine, *sharePublisher, revisions.Publication) {
	b.Helper()
	plan, err := (&rollout.Policy{Steps: []rollout.Step{{Proxies: ptr(rollout.Text("10%"))}, {Proxies: ptr(rollout.Text("50%"))}}}).Compile("")
	require.NoError(b, err)
	pub := &sharePublisher{want: -2}
	e, err := revisions.New(revisions.Options{Store: memStore{}, Publisher: pub, Rollouts: func(string) *rollout.Plan { return plan }})
	require.NoError(b, err)
	require.NoError(b, e.Restore(context.Background()))
	ctx := context.Background()
	origin := sources.Origin{Kind: sources.KindGit, Source: "config", Commit: "c1"}
	for i := range 1000 {
		e.ObserveProxy(revisions.ProxyEvent{Kind: revisions.ProxyConnected, Node: node, Proxy: fmt.Sprintf("p-%04d", i), Bucket: i * 10})
	}
	revisions.Drain(e)
	require.NoError(b, e.Apply(ctx, node, benchConfig(node, 1, 100), origin))
	st, _ := e.Node(node)
	for i := range 1000 {
		e.ObserveProxy(revisions.ProxyEvent{Kind: revisions.ProxyACK, Node: node, Proxy: fmt.Sprintf("p-%04d", i), SnapshotVersion: st.Published.Version})
	}
	revisions.Drain(e)
	origin.Commit = "c2"
	require.NoError(b, e.Apply(ctx, node, benchConfig(node, 2, 100), origin))
	v, ok := e.Rollout(node)
	require.True(b, ok)
	require.Equal(b, 100, v.OnCandidate, "exactly the bucketed 100 are canaries")
	cand := *pub.split.Candidate
	for i := range 99 {
		e.ObserveProxy(revisions.ProxyEvent{Kind: revisions.ProxyACK, Node: node, Proxy: fmt.Sprintf("p-%04d", i), SnapshotVersion: cand.Version})
	}
	revisions.Drain(e)
	return e, pub, cand
}

func ptr[T any](v T) *T { return &v }

// BenchmarkRollout measures, for 1 000 proxies of one node at a 10% step,
// the engine's part of the two rollout figures: the last canary's
// ACK satisfies the gate → the next step's publication is handed to the
// xDS server; a canary's NACK → the publication without the candidate
// (every canary back on the last good revision). Each iteration builds its
// engine untimed; the p99 of the timed part is reported.
func BenchmarkRollout(b *testing.B) {
	run := func(b *testing.B, ev func(cand revisions.Publication) revisions.ProxyEvent, share int) {
		var took []time.Duration
		for b.Loop() {
			b.StopTimer()
			e, pub, cand := rolloutAt10(b)
			pub.expect(share)
			b.StartTimer()
			start := time.Now()
			e.ObserveProxy(ev(cand))
			revisions.Drain(e)
			took = append(took, time.Since(start))
			b.StopTimer()
			require.True(b, pub.seen, "the expected publication was made")
			b.StartTimer()
		}
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
	}
	b.Run("gate-satisfied-next-step", func(b *testing.B) {
		run(b, func(cand revisions.Publication) revisions.ProxyEvent {
			return revisions.ProxyEvent{Kind: revisions.ProxyACK, Node: node, Proxy: "p-0099", SnapshotVersion: cand.Version}
		}, 5000)
	})
	b.Run("canary-nack-back-to-stable", func(b *testing.B) {
		run(b, func(cand revisions.Publication) revisions.ProxyEvent {
			return revisions.ProxyEvent{Kind: revisions.ProxyNACK, Node: node, Proxy: "p-0042", SnapshotVersion: cand.Version, Error: "bad cluster"}
		}, -1)
	})
}
