// Package engineio measures what the revisions engine's store writes cost
// the rest of the engine: how long a commit that changes 1 000 nodes takes
// to be published on the bbolt store (standalone) and on the API server
// (the Kubernetes home, envtest), and how long the reads that
// /api/v1/nodes serves take while every store write answers 200 ms late.
//
// It uses only the engine's exported API, so that run.sh can run the same
// benchmarks on this tree and on the engine before issue 24 in one go
// (newstore_test.go and readers_test.go, which use what that engine lacks,
// stay here):
//
//	test/bench/engineio/run.sh
package engineio

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/boltstore"
	"github.com/legate-dev/legate/revisions/kubestore"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/stats"
)

const (
	nodes    = 1000
	cdsType  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	clusters = 10
)

// configOf is node id's configuration of clusters clusters whose content
// follows round.
func configOf(id string, round int) *render.NodeConfig {
	res := make([]render.Resource, clusters)
	h := sha256.New()
	for i := range res {
		body := fmt.Appendf(nil, "%s-round-%d-cluster-%d-%0180d", id, round, i, 0)
		res[i] = render.Resource{Name: fmt.Sprintf("cluster-%02d", i), Body: body}
		h.Write(body)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	return &render.NodeConfig{NodeID: id, Hash: sum, Types: map[string]render.TypeSet{cdsType: {Hash: sum, Resources: res}}}
}

func nodeID(i int) string { return fmt.Sprintf("node-%04d", i) }

// countingPublisher counts publications and remembers when the last one was
// made.
type countingPublisher struct {
	count atomic.Int64
	mu    sync.Mutex
	last  time.Time
}

func (p *countingPublisher) Publish(string, revisions.Publication) error {
	now := time.Now()
	p.mu.Lock()
	if now.After(p.last) {
		p.last = now
	}
	p.mu.Unlock()
	p.count.Add(1)
	return nil
}

func (p *countingPublisher) lastAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// applyAll applies round's content to every node, from workers goroutines
// (1: one after the other, as the pipeline applied a commit before).
func applyAll(b *testing.B, e *revisions.Engine, round, workers int) {
	b.Helper()
	origin := sources.Origin{Kind: sources.KindGit, Source: "bench", Ref: "main", Commit: fmt.Sprintf("%040d", round)}
	ctx := context.Background()
	inParallel(b, workers, func(i int) error {
		return e.Apply(ctx, nodeID(i), configOf(nodeID(i), round), origin)
	})
}

// inParallel calls do for each of the nodes from workers goroutines and
// fails b with the first error.
func inParallel(b *testing.B, workers int, do func(node int) error) {
	b.Helper()
	next := atomic.Int64{}
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= nodes {
					return
				}
				if err := do(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(b, err)
	}
}

// benchThousand times, per iteration, a commit that changes every one of
// 1 000 nodes, from the first Apply until every node is published; the
// nodes are created by a round before the timer starts.
// calls, when not nil, times the store's API calls (kubeStore's client
// made through calls.wrap).
func benchThousand(b *testing.B, st revisions.Store, workers int, calls *callTimes) {
	pub := &countingPublisher{}
	e, err := revisions.New(revisions.Options{Store: st, Publisher: pub})
	require.NoError(b, err)
	require.NoError(b, e.Restore(context.Background()))
	applyAll(b, e, 0, workers)
	// A store that writes some of a publication after it (kubestore
	// unmarks the revision served before in the background) says when
	// it has settled: the time until then is reported too.
	settler, _ := st.(interface{ Settle() })
	var total, settled time.Duration
	cpuBefore, cpuAfter := map[string]time.Duration{}, map[string]time.Duration{}
	trailing := 0 // unmarking patches made before the round's last publication
	round := 0
	if calls != nil {
		calls.start()
	}
	for b.Loop() {
		round++
		before := pub.count.Load()
		cpu := cpuUse()
		start := time.Now()
		applyAll(b, e, round, workers)
		require.Equal(b, before+nodes, pub.count.Load(), "every node is published once per round")
		total += pub.lastAt().Sub(start)
		if calls != nil {
			trailing += calls.started("PATCH revision", start, pub.lastAt())
		}
		for name, d := range cpuUse() {
			cpuBefore[name] += cpu[name]
			cpuAfter[name] += d
		}
		if settler != nil {
			settler.Settle()
			settled += time.Since(start)
		}
	}
	reportCPU(b, cpuBefore, cpuAfter, round)
	if calls != nil {
		reportCalls(b, calls.stop(), round)
		b.ReportMetric(float64(trailing)/float64(round*nodes), "patch-revision-before-published-per-node")
	}
	b.ReportMetric(ms(total)/float64(round), "all-published-ms")
	if settler != nil {
		b.ReportMetric(ms(settled)/float64(round), "store-settled-ms")
	}
	b.ReportMetric(0, "ns/op")
}

// newKubeStore is the Kubernetes home's store on c. The engine before
// issue 24 has only the Store literal; newstore_test.go, which run.sh does
// not copy there, makes it this tree's kubestore.New.
var newKubeStore = func(c client.Client, namespace string) revisions.Store {
	return kubestore.Store{Client: c, Namespace: namespace}
}

// kubeStore is the store on a fresh API server; through, when not nil,
// turns the server's client configuration into the one the store uses
// (a proxy in front of it).
func kubeStore(b *testing.B, through func(*rest.Config) *rest.Config) revisions.Store {
	b.Helper()
	crlog.SetLogger(logr.Discard())
	scheme := runtime.NewScheme()
	require.NoError(b, clientgoscheme.AddToScheme(scheme))
	require.NoError(b, v1alpha1.AddToScheme(scheme))
	cfg := envtest.Start(b).Config
	if through != nil {
		cfg = through(cfg)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	require.NoError(b, err)
	return newKubeStore(c, "default")
}

// delayingProxy puts an HTTP reverse proxy on loopback in front of the API
// server of cfg and returns the configuration that reaches it: the proxy
// holds the credentials, and holds every mutating request (POST, PUT,
// PATCH, DELETE) for delay before passing it on, as an API server (or its
// etcd) that is slow to write. Reads pass at once.
func delayingProxy(b *testing.B, delay *atomic.Int64) func(*rest.Config) *rest.Config {
	return func(cfg *rest.Config) *rest.Config {
		b.Helper()
		host := cfg.Host
		if !strings.Contains(host, "://") {
			host = "https://" + host
		}
		target, err := url.Parse(host)
		require.NoError(b, err)
		transport, err := rest.TransportFor(cfg)
		require.NoError(b, err)
		proxy := httputil.NewSingleHostReverseProxy(target)
		proxy.Transport = transport
		// The writer's requests are cancelled when a run ends: not news.
		proxy.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.Method {
			case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
				select {
				case <-time.After(time.Duration(delay.Load())):
				case <-r.Context().Done():
					return
				}
			}
			proxy.ServeHTTP(w, r)
		}))
		b.Cleanup(srv.Close)
		return &rest.Config{Host: srv.URL, QPS: cfg.QPS, Burst: cfg.Burst, RateLimiter: cfg.RateLimiter}
	}
}

func boltStore(b *testing.B) *boltstore.Store {
	b.Helper()
	st, err := boltstore.Open(b.TempDir())
	require.NoError(b, err)
	b.Cleanup(func() { _ = st.Close() })
	return st
}

// BenchmarkThousandNodes: a commit that changes 1 000 nodes, until every
// node is published. "sequential" applies the nodes one after the other,
// as the pipeline does; "parallel16" from 16 goroutines, which an engine
// that serializes every store write cannot turn into speed.
func BenchmarkThousandNodes(b *testing.B) {
	for _, workers := range []int{1, 16} {
		mode := "sequential"
		if workers > 1 {
			mode = fmt.Sprintf("parallel%d", workers)
		}
		b.Run("bolt/"+mode, func(b *testing.B) { benchThousand(b, boltStore(b), workers, nil) })
		b.Run("kube/"+mode, func(b *testing.B) {
			calls := &callTimes{}
			benchThousand(b, kubeStore(b, calls.wrap), workers, calls)
		})
	}
}

// lateStore answers every Commit delay late, as an API server that is
// slow to write; it keeps nothing.
type lateStore struct{ delay atomic.Int64 }

func (*lateStore) Load(context.Context) ([]revisions.NodeData, error) { return nil, nil }

func (s *lateStore) Commit(ctx context.Context, _ revisions.Update) error {
	select {
	case <-time.After(time.Duration(s.delay.Load())):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// BenchmarkReadsWhileTheStoreIsSlow: the latency of Engine.Nodes and
// Engine.Node (what /api/v1/nodes and /api/v1/nodes/{id} serve), over
// 1 000 nodes, while every store write answers 200 ms late and a writer
// applies new content to one node after the other (as the pipeline does),
// read back to back for readFor per iteration.
func BenchmarkReadsWhileTheStoreIsSlow(b *testing.B) {
	const readFor = 5 * time.Second
	st := &lateStore{}
	e, err := revisions.New(revisions.Options{Store: st, Publisher: &countingPublisher{}})
	require.NoError(b, err)
	require.NoError(b, e.Restore(context.Background()))
	applyAll(b, e, 0, 1) // the nodes are made while the store is fast
	st.delay.Store(int64(200 * time.Millisecond))

	ctx, cancel := context.WithCancel(context.Background())
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		for round := 1; ctx.Err() == nil; round++ {
			for i := 0; i < nodes && ctx.Err() == nil; i++ {
				_ = e.Apply(ctx, nodeID(i), configOf(nodeID(i), round), sources.Origin{Source: "bench"})
			}
		}
	}()
	var lat []time.Duration
	for b.Loop() {
		deadline := time.Now().Add(readFor)
		for i := 0; time.Now().Before(deadline); i++ {
			start := time.Now()
			if i%2 == 0 {
				require.Len(b, e.Nodes(), nodes)
			} else {
				_, ok := e.Node(nodeID(i % nodes))
				require.True(b, ok)
			}
			lat = append(lat, time.Since(start))
		}
	}
	cancel()
	<-writer
	reportReads(b, lat)
}

func reportReads(b *testing.B, lat []time.Duration) {
	b.Helper()
	require.NotEmpty(b, lat)
	slices.Sort(lat)
	b.ReportMetric(ms(stats.Percentile(lat, 50)), "read-p50-ms")
	b.ReportMetric(ms(stats.Percentile(lat, 99)), "read-p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "read-max-ms")
	b.ReportMetric(float64(len(lat)), "reads")
	b.ReportMetric(0, "ns/op")
}

// nodesReader reads what GET /api/v1/nodes serves, from an engine, once
// per call. Both engines have the "engine" reader (Engine.Nodes, the
// exported API); readers_test.go, which run.sh does not copy to the
// engine before issue 24 (it has no read API package), adds "http": the
// real handler of /api/v1/nodes over loopback.
type nodesReader struct {
	name string
	make func(b *testing.B, e *revisions.Engine) func() error
}

var nodesReaders = []nodesReader{{name: "engine", make: func(_ *testing.B, e *revisions.Engine) func() error {
	return func() error {
		if n := len(e.Nodes()); n != nodes {
			return fmt.Errorf("%d nodes, want %d", n, nodes)
		}
		return nil
	}
}}}

// BenchmarkReadsWhileTheAPIServerIsSlow: the latency of what
// /api/v1/nodes serves over 1 000 nodes of the Kubernetes home's store
// while a proxy in front of the API server (envtest) holds every write for
// 200 ms and a writer applies new content to one node after the other;
// each reader reads back to back for readFor. The nodes are made while the
// proxy passes writes at once.
func BenchmarkReadsWhileTheAPIServerIsSlow(b *testing.B) {
	const readFor = 5 * time.Second
	var delay atomic.Int64
	pub := &countingPublisher{}
	e, err := revisions.New(revisions.Options{Store: kubeStore(b, delayingProxy(b, &delay)), Publisher: pub})
	require.NoError(b, err)
	require.NoError(b, e.Restore(context.Background()))
	applyAll(b, e, 0, 16)
	delay.Store(int64(200 * time.Millisecond))

	ctx, cancel := context.WithCancel(context.Background())
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		for round := 1; ctx.Err() == nil; round++ {
			for i := 0; i < nodes && ctx.Err() == nil; i++ {
				_ = e.Apply(ctx, nodeID(i), configOf(nodeID(i), round), sources.Origin{Source: "bench"})
			}
		}
	}()
	defer func() { cancel(); <-writer }()
	for _, r := range nodesReaders {
		b.Run(r.name, func(b *testing.B) {
			read := r.make(b, e)
			var lat []time.Duration
			published := pub.count.Load()
			for b.Loop() {
				deadline := time.Now().Add(readFor)
				for time.Now().Before(deadline) {
					start := time.Now()
					require.NoError(b, read())
					lat = append(lat, time.Since(start))
				}
			}
			// The writer's publications in the window: it was writing.
			b.ReportMetric(float64(pub.count.Load()-published), "publications")
			reportReads(b, lat)
		})
	}
}
