// Package kube measures the Kubernetes home: a real API server (envtest),
// `legate controller` in process and a real grpc-go xDS client.
//
//	make bench-kube
package kube

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	goruntime "runtime"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/kubestore"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/backend"
	"github.com/legate-dev/legate/test/internal/ctltest"
	"github.com/legate-dev/legate/test/internal/stats"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
)

const node = "grpc-client"

// spec is the EnvoyConfig spec of node from resource documents.
func spec(b *testing.B, docs ...string) v1alpha1.EnvoyConfigSpec {
	ec, err := xdsyaml.EnvoyConfig(node, docs...)
	require.NoError(b, err)
	return ec.Spec
}

// start runs a controller on cfg until the benchmark ends, with its
// options as change leaves them.
func start(b *testing.B, cfg *rest.Config, change ...func(*controller.Options)) *controller.Controller {
	crlog.SetLogger(logr.Discard())
	opts := controller.Options{
		Config: cfg, Namespace: "legate-system", XDSAddr: "127.0.0.1:0", HTTPAddr: "0", StateDir: b.TempDir(), Log: logr.Discard(),
	}
	for _, f := range change {
		f(&opts)
	}
	ctl, err := controller.New(opts)
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctl.Run(ctx) }()
	b.Cleanup(func() {
		cancel()
		require.NoError(b, <-done)
	})
	return ctl
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func report(b *testing.B, name string, lat []time.Duration) {
	slices.Sort(lat)
	b.ReportMetric(ms(stats.Percentile(lat, 50)), name+"-p50-ms")
	b.ReportMetric(ms(stats.Percentile(lat, 99)), name+"-p99-ms")
}

// BenchmarkEnvoyConfig times, in one run, an EnvoyConfig update until
// grpc-go routes by it (the update is ACKed and in use), and an update
// grpc-go rejects until the Rollback condition is visible through the API
// server (what `kubectl get ec` shows), each iteration one of each.
func BenchmarkEnvoyConfig(b *testing.B) {
	cluster := envtest.Start(b)
	c := ctltest.Client(b, cluster.Config)
	ctx := context.Background()
	ctl := start(b, cluster.Config)
	x, y := backend.Start(b, "x"), backend.Start(b, "y")
	good := func(to string) v1alpha1.EnvoyConfigSpec {
		return spec(b, xdsyaml.APIListener("greeter", "greeter", "routes"),
			xdsyaml.RouteConfiguration("routes", "greeter", xdsyaml.Route{Cluster: to}),
			xdsyaml.EDSCluster("x"), xdsyaml.Endpoints("x", x.Port),
			xdsyaml.EDSCluster("y"), xdsyaml.Endpoints("y", y.Port))
	}
	bad := spec(b, xdsyaml.APIListener("greeter", "greeter", "routes"),
		xdsyaml.RouteConfiguration("routes", "greeter", xdsyaml.Route{Cluster: "y"}),
		xdsyaml.EDSCluster("x"), xdsyaml.Endpoints("x", x.Port),
		xdsyaml.StaticCluster("y", y.Port)) // valid Envoy, refused by grpc-go
	ec := &v1alpha1.EnvoyConfig{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: "default"}, Spec: good("x")}
	require.NoError(b, c.Create(ctx, ec))
	grpcClient := backend.Dial(b, ctl.XDSAddr(), node, "pod-1", "greeter")
	require.Eventually(b, func() bool { return grpcClient.Call() == "x" }, time.Minute, 5*time.Millisecond)

	update := func(s v1alpha1.EnvoyConfigSpec) {
		for {
			cur := &v1alpha1.EnvoyConfig{}
			require.NoError(b, c.Get(ctx, client.ObjectKeyFromObject(ec), cur))
			cur.Spec = s
			if err := c.Update(ctx, cur); err == nil {
				return
			}
		}
	}
	state := func() (string, bool) {
		cur := &v1alpha1.EnvoyConfig{}
		require.NoError(b, c.Get(ctx, client.ObjectKeyFromObject(ec), cur))
		ready := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionReady)
		if cur.Status.CacheState == nil || ready == nil {
			return "", false
		}
		return *cur.Status.CacheState, ready.Status == metav1.ConditionTrue
	}
	toACK := make([]time.Duration, 0, b.N)
	toRollback := make([]time.Duration, 0, b.N)
	routes := []string{"y", "x"}
	b.ResetTimer()
	for i := range b.N {
		to := routes[i%2]
		start := time.Now()
		update(good(to))
		require.Eventually(b, func() bool { return grpcClient.Call() == to }, time.Minute, time.Millisecond)
		toACK = append(toACK, time.Since(start))
		require.Eventually(b, func() bool { s, ok := state(); return ok && s == v1alpha1.CacheInSync }, time.Minute, 5*time.Millisecond)

		start = time.Now()
		update(bad)
		require.Eventually(b, func() bool { s, _ := state(); return s == v1alpha1.CacheRollback }, time.Minute, time.Millisecond)
		toRollback = append(toRollback, time.Since(start))
		require.Equal(b, to, grpcClient.Call(), "the client stays on the last good configuration")
	}
	b.StopTimer()
	report(b, "update-to-ack", toACK)
	report(b, "nack-to-rollback-condition", toRollback)
}

// BenchmarkAPIServerWritesPerPublication counts the API server writes of
// the revision store when one node of many publishes a revision of new
// content (first publication of each node in setup): O(changed nodes)
// means the count does not grow with the number of nodes. It counts what
// revisions/kubestore's TestAPICallsPerPublication pins, by verb (the
// log line), through the store a controller uses (kubestore.New, with its
// caches: no read before a write).
func BenchmarkAPIServerWritesPerPublication(b *testing.B) {
	crlog.SetLogger(logr.Discard())
	cluster := envtest.Start(b)
	scheme, err := controller.Scheme()
	require.NoError(b, err)
	direct, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	require.NoError(b, err)
	ctx := context.Background()
	for _, nodes := range []int{10, 1000} {
		b.Run(fmt.Sprintf("nodes-%d", nodes), func(b *testing.B) {
			ns := fmt.Sprintf("writes-%d-%d", nodes, time.Now().UnixNano()) // set up again for each b.N
			require.NoError(b, direct.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
			var writes int
			counting, err := client.NewWithWatch(cluster.Config, client.Options{Scheme: scheme})
			require.NoError(b, err)
			verbs := map[string]int{}
			count := func(verb string) { writes++; verbs[verb]++ }
			store := kubestore.New(interceptor.NewClient(counting, interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					count("create")
					return c.Create(ctx, obj, opts...)
				},
				Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					count("update")
					return c.Update(ctx, obj, opts...)
				},
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
					count("patch")
					return c.Patch(ctx, obj, p, opts...)
				},
				SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
					count("status update")
					return c.SubResource(sub).Update(ctx, obj, opts...)
				},
				SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
					count("status patch")
					return c.SubResource(sub).Patch(ctx, obj, p, opts...)
				},
			}), ns)
			engine, err := revisions.New(revisions.Options{Store: store, Publisher: revisions.PublisherFunc(func(string, revisions.Publication) error { return nil })})
			require.NoError(b, err)
			require.NoError(b, engine.Restore(ctx))
			cfg := func(id string, gen int) *render.NodeConfig {
				// The type's hash is what render.HashNode hashes: without
				// it every generation had the same node hash, and each
				// "publication" re-applied the stored revision (2 writes:
				// the record and the revision's state) instead of storing
				// new content (TestAPICallsPerPublication's 3).
				nc := &render.NodeConfig{NodeID: id, Types: map[string]render.TypeSet{
					"type.googleapis.com/envoy.config.cluster.v3.Cluster": {Hash: fmt.Sprintf("c%d", gen), Resources: []render.Resource{{Name: fmt.Sprintf("c%d", gen), Body: []byte(fmt.Sprintf(`{"name":"c%d"}`, gen))}}},
				}}
				nc.Hash = render.HashNode(nc)
				return nc
			}
			for i := range nodes {
				id := fmt.Sprintf("node-%04d", i)
				require.NoError(b, engine.Apply(ctx, id, cfg(id, 0), sources.Origin{Kind: sources.KindKube, Namespace: ns, Name: id, Generation: 1}))
			}
			writes = 0
			clear(verbs)
			b.ResetTimer()
			for i := range b.N {
				require.NoError(b, engine.Apply(ctx, "node-0000", cfg("node-0000", i+1), sources.Origin{Kind: sources.KindKube, Namespace: ns, Name: "node-0000", Generation: int64(i + 2)}))
			}
			store.Settle() // the unmarkings of the revisions before trail the publications
			b.StopTimer()
			b.ReportMetric(float64(writes)/float64(b.N), "writes/publication")
			b.Logf("%d publications: %v", b.N, verbs)
		})
	}
}

// BenchmarkControllerMemory measures the controller's live heap (after a
// GC) holding n EnvoyConfigs of 10 revisions each, against the same
// process before the controller started, at 10, 100 and 1 000 objects.
// Run it with -benchtime 1x: each iteration is a new API server.
func BenchmarkControllerMemory(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("envoyconfigs-%d", n), func(b *testing.B) {
			for range b.N {
				cluster := envtest.Start(b)
				fast := rest.CopyConfig(cluster.Config)
				fast.QPS, fast.Burst = 500, 1000 // client-go's default (5/s) would make the setup the measurement
				c := ctltest.Client(b, fast)
				ctx := context.Background()
				before := liveHeap()
				start(b, fast)
				cluster1 := func(i, rev int) v1alpha1.EnvoyConfigSpec {
					return spec(b, fmt.Sprintf(`{"@type":"type.googleapis.com/envoy.config.cluster.v3.Cluster","name":"c","type":"STATIC","connect_timeout":"%ds","load_assignment":{"cluster_name":"c","endpoints":[{"lb_endpoints":[{"endpoint":{"address":{"socket_address":{"address":"10.0.%d.%d","port_value":8080}}}}]}]}}`, rev+1, i/250, i%250+1))
				}
				objs := make([]*v1alpha1.EnvoyConfig, n)
				for i := range n {
					s := cluster1(i, 0)
					s.NodeID = fmt.Sprintf("node-%04d", i)
					objs[i] = &v1alpha1.EnvoyConfig{ObjectMeta: metav1.ObjectMeta{Name: s.NodeID, Namespace: "default"}, Spec: s}
					require.NoError(b, c.Create(ctx, objs[i]))
				}
				// Round by round, each waiting until every object's round is
				// stored: the controller coalesces updates that come faster
				// than it reconciles, which would leave rounds unrendered.
				const revs = 10
				// Counted from the objects' metadata: listing 10 000
				// revisions whole every poll would load the API server more
				// than the controller does.
				stored := func() int {
					var list metav1.PartialObjectMetadataList
					list.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("EnvoyConfigRevisionList"))
					require.NoError(b, c.List(ctx, &list, client.InNamespace("legate-system")))
					return len(list.Items)
				}
				require.Eventually(b, func() bool { return stored() >= n }, 30*time.Minute, time.Second)
				for rev := 1; rev < revs; rev++ {
					for i, ec := range objs {
						s := cluster1(i, rev)
						s.NodeID = ec.Spec.NodeID
						for {
							cur := &v1alpha1.EnvoyConfig{}
							require.NoError(b, c.Get(ctx, client.ObjectKeyFromObject(ec), cur))
							cur.Spec = s
							if err := c.Update(ctx, cur); err == nil {
								break
							}
						}
					}
					require.Eventually(b, func() bool { return stored() >= n*(rev+1) }, 30*time.Minute, time.Second,
						"round %d is stored", rev)
				}
				total := stored()
				after := liveHeap()
				b.ReportMetric(float64(after-before)/(1<<20), "heap-MiB")
				b.ReportMetric(float64(total), "revisions")
			}
		})
	}
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	goruntime.GC()
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return m.HeapInuse
}
