package revisions_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/boltstore"
	"github.com/legate-dev/legate/sources"
)

// benchConfig is a node config of n clusters with ~200-byte bodies; seed
// makes the content distinct.
func benchConfig(nodeID string, seed, n int) *render.NodeConfig {
	res := make([]render.Resource, n)
	h := sha256.New()
	for i := range res {
		body := make([]byte, 200)
		copy(body, fmt.Sprintf("cluster-%d-%d", seed, i))
		res[i] = render.Resource{Name: fmt.Sprintf("cluster-%04d", i), Body: body}
		h.Write(body)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	return &render.NodeConfig{NodeID: nodeID, Hash: sum, Types: map[string]render.TypeSet{cdsType: {Hash: sum, Resources: res}}}
}

type discardPublisher struct{}

func (discardPublisher) Publish(string, revisions.Publication) error { return nil }

// memStore is the baseline's store: it keeps nothing.
type memStore struct{}

func (memStore) Load(context.Context) ([]revisions.NodeData, error) { return nil, nil }
func (memStore) Commit(context.Context, revisions.Update) error     { return nil }

func newBenchEngine(b *testing.B, st revisions.Store) *revisions.Engine {
	b.Helper()
	e, err := revisions.New(revisions.Options{Store: st, Publisher: discardPublisher{}})
	require.NoError(b, err)
	require.NoError(b, e.Restore(context.Background()))
	return e
}

func openBenchStore(b *testing.B) *boltstore.Store {
	b.Helper()
	st, err := boltstore.Open(b.TempDir())
	require.NoError(b, err)
	b.Cleanup(func() { _ = st.Close() })
	return st
}

// BenchmarkApply measures one Apply of new content (100 clusters) that is
// published, on the bbolt store and, as baselines, the bare bbolt Commit of
// the same revision and the engine on a store that keeps nothing.
func BenchmarkApply(b *testing.B) {
	const clusters = 100
	cfgs := make([]*render.NodeConfig, 1000)
	for i := range cfgs {
		cfgs[i] = benchConfig(node, i, clusters)
	}
	origin := sources.Origin{Kind: sources.KindGit, Ref: "main", Commit: "0123456789abcdef0123456789abcdef01234567"}
	ctx := context.Background()

	b.Run("engine+bolt", func(b *testing.B) {
		e := newBenchEngine(b, openBenchStore(b))
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			require.NoError(b, e.Apply(ctx, node, cfgs[i%len(cfgs)], origin))
			i++
		}
	})
	b.Run("baseline-bolt-commit", func(b *testing.B) {
		st := openBenchStore(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			cfg := cfgs[i%len(cfgs)]
			rev := &revisions.Revision{Node: node, Hash: cfg.Hash, Origin: origin, Config: cfg}
			rec := revisions.NodeRecord{Node: node, History: []string{cfg.Hash}, Published: cfg.Hash, Generation: uint64(i), Revision: uint64(i + 1)}
			require.NoError(b, st.Commit(ctx, revisions.Update{Record: rec, Put: []*revisions.Revision{rev}}))
			i++
		}
	})
	b.Run("engine+nostore", func(b *testing.B) {
		e := newBenchEngine(b, memStore{})
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			require.NoError(b, e.Apply(ctx, node, cfgs[i%len(cfgs)], origin))
			i++
		}
	})
}

// BenchmarkMemoryAfter1000Revisions applies 1000 revisions (100 nodes × 10,
// all kept at the default history) and reports the live heap, beside the
// baseline of holding the same 1000 rendered configs in a slice.
func BenchmarkMemoryAfter1000Revisions(b *testing.B) {
	const nodes, perNode, clusters = 100, 10, 100
	ctx := context.Background()
	heap := func() float64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return float64(m.HeapAlloc) / (1 << 20)
	}
	origin := sources.Origin{Kind: sources.KindGit, Ref: "main", Commit: "0123456789abcdef0123456789abcdef01234567"}

	b.Run("engine+bolt", func(b *testing.B) {
		for b.Loop() {
			before := heap()
			e := newBenchEngine(b, openBenchStore(b))
			for n := range nodes {
				id := fmt.Sprintf("node-%03d", n)
				for r := range perNode {
					require.NoError(b, e.Apply(ctx, id, benchConfig(id, r, clusters), origin))
				}
			}
			b.ReportMetric(heap()-before, "heap-MiB")
			runtime.KeepAlive(e)
		}
	})
	b.Run("baseline-configs", func(b *testing.B) {
		for b.Loop() {
			before := heap()
			var keep []*render.NodeConfig
			for n := range nodes {
				id := fmt.Sprintf("node-%03d", n)
				for r := range perNode {
					keep = append(keep, benchConfig(id, r, clusters))
				}
			}
			b.ReportMetric(heap()-before, "heap-MiB")
			runtime.KeepAlive(keep)
		}
	})
}

// BenchmarkTickIdleNodes measures one Tick over 10 000 published nodes
// with nothing to judge: what the engine pays every second to look at a
// fleet at rest.
func BenchmarkTickIdleNodes(b *testing.B) {
	e := newBenchEngine(b, memStore{})
	ctx := context.Background()
	origin := sources.Origin{Kind: sources.KindGit, Ref: "main", Commit: "0123456789abcdef0123456789abcdef01234567"}
	for i := range 10000 {
		id := fmt.Sprintf("node-%05d", i)
		require.NoError(b, e.Apply(ctx, id, benchConfig(id, i, 1), origin))
	}
	b.ReportAllocs()
	for b.Loop() {
		e.Tick(ctx, time.Now())
	}
}
