package revisions_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/sources"
)

// versionPublisher keeps the version of the newest publication.
type versionPublisher struct {
	mu      sync.Mutex
	version string
}

func (p *versionPublisher) Publish(_ string, pub revisions.Publication) error {
	p.mu.Lock()
	p.version = pub.Version
	p.mu.Unlock()
	return nil
}

func (p *versionPublisher) last() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.version
}

// BenchmarkCommitToACK measures, without a rollout policy, the engine's
// part of commit → ACK: one Apply of new content (100 clusters) for a node
// of 100 connected proxies, every proxy's ACK of it, until the node is
// InSync again. It uses only API that the engine had before progressive
// rollouts, so the same file runs on the tree before them (docs/benchmarks.md,
// "progressive rollout": the no-policy comparison).
func BenchmarkCommitToACK(b *testing.B) {
	const proxies, clusters = 100, 100
	ctx := context.Background()
	pub := &versionPublisher{}
	e, err := revisions.New(revisions.Options{Store: memStore{}, Publisher: pub})
	require.NoError(b, err)
	require.NoError(b, e.Restore(ctx))
	names := make([]string, proxies)
	for i := range names {
		names[i] = fmt.Sprintf("p-%03d", i)
		e.ObserveProxy(revisions.ProxyEvent{Kind: revisions.ProxyConnected, Node: node, Proxy: names[i]})
	}
	revisions.Drain(e)
	configs := make([]*render.NodeConfig, 64)
	for i := range configs {
		configs[i] = benchConfig(node, i, clusters)
	}
	origin := sources.Origin{Kind: sources.KindGit, Source: "config", Ref: "main", Commit: "0123456789abcdef0123456789abcdef01234567"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		require.NoError(b, e.Apply(ctx, node, configs[i%len(configs)], origin))
		v := pub.last()
		for _, p := range names {
			e.ObserveProxy(revisions.ProxyEvent{Kind: revisions.ProxyACK, Node: node, Proxy: p, TypeURL: cdsType, SnapshotVersion: v})
		}
		revisions.Drain(e)
		i++
	}
	b.StopTimer()
	st, ok := e.Node(node)
	require.True(b, ok)
	require.Equal(b, revisions.StateInSync, st.State, "every proxy ACKed the last publication")
}
