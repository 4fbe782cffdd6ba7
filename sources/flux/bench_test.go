package flux_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/sources/flux"
	"github.com/legate-dev/legate/sources/oci"
)

// BenchmarkFetchBulkArtifact fetches a 200 KB Flux artifact that unpacks
// to 200 MiB of a file the renderer never reads beside a small YAML file,
// with the controller's limits: allocated bytes per fetch, and the live
// heap three sources hold afterwards (issue 23, finding 5).
//
//	go test ./sources/flux -run '^$' -bench FetchBulkArtifact -benchmem -benchtime 3x
func BenchmarkFetchBulkArtifact(b *testing.B) {
	blob := bomb(b, filler{"envoy/blob.bin", 200 << 20}, filler{"envoy/edge.yaml", 5})
	f := newFixture(b, flux.KindGitRepository)
	b.ReportMetric(float64(len(blob))/1000, "artifact-kB")
	var held []*flux.Source
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := range b.N {
		f.publish("/a.tar.gz", blob, digestOf(blob), fmt.Sprintf("main@sha1:%040d", i), nil)
		src := f.source("envoy", oci.Limits{})
		_, err := src.Fetch(context.Background())
		require.NoError(b, err)
		if len(held) < 3 {
			held = append(held, src)
		}
	}
	b.StopTimer()
	runtime.GC()
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/(1<<20), "live-MiB-of-3")
	runtime.KeepAlive(held)
}
