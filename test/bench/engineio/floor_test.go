package engineio

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkRevisionCreatesAlone is the floor of ThousandNodes/kube: the
// 1 000 EnvoyConfigRevision creates that a commit changing 1 000 nodes
// makes whatever else the store does (one new revision object a node, as
// the store writes it: ten resources, origin, four conditions), from 16
// goroutines as the pipeline applies, with no engine, no record and no
// unmarking. If this alone takes more than three times what the bbolt
// store needs for the whole commit, no write schedule that keeps one
// revision object per node meets issue 24's ratio on this machine.
func BenchmarkRevisionCreatesAlone(b *testing.B) {
	c := apiClient(b)
	ctx := context.Background()
	var seq atomic.Int64
	createAll := func() {
		inParallel(b, 16, func(int) error {
			return c.Create(ctx, revisionObject(int(seq.Add(1)), false, true))
		})
	}
	createAll() // as ThousandNodes, a first round before the timer: the store holds 1 000 nodes' revisions
	var total time.Duration
	cpuBefore, cpuAfter := map[string]time.Duration{}, map[string]time.Duration{}
	rounds := 0
	for b.Loop() {
		rounds++
		cpu := cpuUse()
		start := time.Now()
		createAll()
		total += time.Since(start)
		for name, d := range cpuUse() {
			cpuBefore[name] += cpu[name]
			cpuAfter[name] += d
		}
	}
	reportCPU(b, cpuBefore, cpuAfter, rounds)
	b.ReportMetric(ms(total)/float64(rounds), "all-created-ms")
	b.ReportMetric(0, "ns/op")
}
