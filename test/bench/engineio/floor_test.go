package engineio

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
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
	const workers = 16
	calls := &callTimes{}
	_ = kubeStore(b, calls.wrap)
	scheme := runtime.NewScheme()
	require.NoError(b, clientgoscheme.AddToScheme(scheme))
	require.NoError(b, v1alpha1.AddToScheme(scheme))
	c, err := client.New(calls.cfg, client.Options{Scheme: scheme})
	require.NoError(b, err)
	ctx := context.Background()

	var seq atomic.Int64
	createAll := func() {
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		var done atomic.Int64
		for range workers {
			wg.Go(func() {
				for done.Add(1) <= nodes {
					if err := c.Create(ctx, revisionObject(int(seq.Add(1)), false, true)); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(b, err)
		}
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
