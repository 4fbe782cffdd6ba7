package preview

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/legate-dev/legate/render"
)

// benchFleetRepo is a repository of n nodes running the quickstart
// (listener, routes, cluster, endpoints) plus a cluster of their own; in
// the first changed nodes that cluster's timeout differs.
func benchFleetRepo(n, changed int) fstest.MapFS {
	fsys := fstest.MapFS{}
	for i := range n {
		node := fmt.Sprintf("node-%04d", i)
		withQuickstart(fsys, node)
		timeout := "1s"
		if i < changed {
			timeout = "2s"
		}
		fsys["nodes/"+node+"/more.yaml"] = clusters(timeout, "api-"+node)
	}
	return fsys
}

func renderBench(b *testing.B, fsys fstest.MapFS) *render.Result {
	res := render.Render(fsys, render.Options{})
	if !res.OK() {
		b.Fatalf("the benchmark repository does not render: %v", res.Diagnostics[0])
	}
	return res
}

// BenchmarkFleetDiff compares, on a 1 000-node repository, rendering the
// head alone with rendering it and comparing it with the base (what a
// pull-request preview does against the served fleet), for a change of
// 10 nodes and of every node, and what legate diff does: render both
// sides (sharing the unchanged nodes) and compare. Issue 29's target: a
// diff under twice the render.
//
//	go test ./preview -run '^$' -bench FleetDiff -benchmem
func BenchmarkFleetDiff(b *testing.B) {
	const nodes = 1000
	baseRepo := benchFleetRepo(nodes, 0)
	base := FleetOf(renderBench(b, baseRepo))
	for _, changed := range []int{10, nodes} {
		head := benchFleetRepo(nodes, changed)
		b.Run(fmt.Sprintf("changed=%d/render", changed), func(b *testing.B) {
			start := cpuTime()
			for b.Loop() {
				renderBench(b, head)
			}
			b.ReportMetric((cpuTime()-start).Seconds()/float64(b.N), "cpu-s/op")
		})
		b.Run(fmt.Sprintf("changed=%d/render+diff", changed), func(b *testing.B) {
			for b.Loop() {
				r := Compare(base, FleetOf(renderBench(b, head)), Options{})
				if r.Summary.Changed != changed {
					b.Fatalf("%d nodes changed, want %d", r.Summary.Changed, changed)
				}
			}
		})
		// legate diff: both sides rendered (RenderPair shares the
		// unchanged nodes), then compared; "unshared" renders both in full
		// side by side, as before RenderPair.
		renderFn := func(f fs.FS) *render.Result { return render.Render(f, render.Options{}) }
		b.Run(fmt.Sprintf("changed=%d/diff-both-sides", changed), func(b *testing.B) {
			start := cpuTime()
			for b.Loop() {
				bf, hf, pair := RenderPair(baseRepo, head, render.Options{}, renderFn)
				if r := Compare(bf, hf, Options{}); r.Summary.Changed != changed || pair.Shared != (changed*2 <= nodes) {
					b.Fatalf("%d nodes changed, want %d (shared %v: %s)", r.Summary.Changed, changed, pair.Shared, pair.Why)
				}
			}
			b.ReportMetric((cpuTime()-start).Seconds()/float64(b.N), "cpu-s/op")
		})
		b.Run(fmt.Sprintf("changed=%d/diff-both-sides-unshared", changed), func(b *testing.B) {
			start := cpuTime()
			for b.Loop() {
				bf, hf, _ := renderBoth(baseRepo, head, renderFn, "")
				if r := Compare(bf, hf, Options{}); r.Summary.Changed != changed {
					b.Fatalf("%d nodes changed, want %d", r.Summary.Changed, changed)
				}
			}
			b.ReportMetric((cpuTime()-start).Seconds()/float64(b.N), "cpu-s/op")
		})
		b.Run(fmt.Sprintf("changed=%d/diff+markdown", changed), func(b *testing.B) {
			h := FleetOf(renderBench(b, head))
			for b.Loop() {
				md := Compare(base, h, Options{}).Markdown(65536)
				if !strings.Contains(md, "node-0000") {
					b.Fatal("the report misses node-0000")
				}
			}
		})
	}
}
