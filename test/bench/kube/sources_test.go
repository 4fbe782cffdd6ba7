package kube

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/test/envtest"
)

// artifactOf is a Flux artifact (tar+gzip) of zero-filled files by name
// and size, with its digest.
func artifactOf(b *testing.B, files map[string]int) ([]byte, string) {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	require.NoError(b, err)
	tw := tar.NewWriter(gz)
	for name, size := range files {
		require.NoError(b, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(size), Typeflag: tar.TypeReg}))
		_, err := tw.Write(make([]byte, size))
		require.NoError(b, err)
	}
	require.NoError(b, tw.Close())
	require.NoError(b, gz.Close())
	sum := sha256.Sum256(buf.Bytes())
	return buf.Bytes(), "sha256:" + hex.EncodeToString(sum[:])
}

// BenchmarkSourceMemory measures the controller's live heap (after a GC)
// once three EnvoySources have each read a Flux artifact of about 255 KB
// that unpacks to 252 MiB, against the same process before the
// controller started (issue 23, finding 5). yaml: 28 files of 9 MiB the
// renderer would read; bulk: one 252 MiB file it never reads beside a
// small YAML file. Run it with -benchtime 1x: each iteration is a new API
// server.
func BenchmarkSourceMemory(b *testing.B) {
	yaml := map[string]int{}
	for i := range 28 {
		yaml[fmt.Sprintf("envoy/f%02d.yaml", i)] = 9 << 20
	}
	for _, shape := range []struct {
		name  string
		files map[string]int
	}{
		{"yaml", yaml},
		{"bulk", map[string]int{"envoy/blob.bin": 252 << 20, "envoy/empty.yaml": 0}},
	} {
		b.Run(shape.name, func(b *testing.B) {
			blob, digest := artifactOf(b, shape.files)
			arts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(blob) }))
			b.Cleanup(arts.Close)
			b.ReportMetric(float64(len(blob))/1000, "artifact-kB")
			for range b.N {
				cluster := envtest.Start(b, envtest.FluxCRDs(b))
				scheme, err := controller.Scheme()
				require.NoError(b, err)
				c, err := client.New(cluster.Config, client.Options{Scheme: scheme})
				require.NoError(b, err)
				ctx := context.Background()
				for _, ns := range []string{"legate-system", "team-a"} {
					require.NoError(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
				}
				before := liveHeap()
				start(b, cluster.Config, func(o *controller.Options) {
					o.FetchAllowNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
				})
				var keys []client.ObjectKey
				for i := range 3 {
					name := fmt.Sprintf("tenant-%d", i)
					repo := &unstructured.Unstructured{}
					repo.SetAPIVersion("source.toolkit.fluxcd.io/v1")
					repo.SetKind("GitRepository")
					repo.SetNamespace("team-a")
					repo.SetName(name)
					require.NoError(b, unstructured.SetNestedMap(repo.Object, map[string]any{
						"url": "https://git.example/team-a/" + name, "interval": "1m", "ref": map[string]any{"branch": "main"},
					}, "spec"))
					require.NoError(b, c.Create(ctx, repo))
					sha := strings.Repeat(fmt.Sprint(i), 40)
					require.NoError(b, unstructured.SetNestedMap(repo.Object, map[string]any{
						"url": arts.URL + "/" + name + ".tar.gz", "digest": digest, "revision": "main@sha1:" + sha,
						"path": "gitrepository/team-a/" + name + "/" + sha + ".tar.gz", "lastUpdateTime": time.Now().UTC().Format(time.RFC3339),
					}, "status", "artifact"))
					require.NoError(b, c.Status().Update(ctx, repo))
					es := &v1alpha1.EnvoySource{
						ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name},
						Spec: v1alpha1.EnvoySourceSpec{
							SourceRef: &v1alpha1.FluxSourceRef{Kind: "GitRepository", Name: name}, Path: "./envoy",
							Interval: metav1.Duration{Duration: time.Hour},
						},
					}
					require.NoError(b, c.Create(ctx, es))
					keys = append(keys, client.ObjectKeyFromObject(es))
				}
				// Every EnvoySource has been fetched once (and rendered,
				// or refused) when its Ready condition says so.
				require.Eventually(b, func() bool {
					for _, key := range keys {
						var es v1alpha1.EnvoySource
						if err := c.Get(ctx, key, &es); err != nil || len(es.Status.Conditions) == 0 {
							return false
						}
					}
					return true
				}, 10*time.Minute, 100*time.Millisecond)
				after := liveHeap()
				b.ReportMetric(float64(int64(after)-int64(before))/(1<<20), "heap-MiB")
			}
		})
	}
}
