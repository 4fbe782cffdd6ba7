package kube

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/backend"
	"github.com/legate-dev/legate/test/internal/ctltest"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
)

// replicaSet is n leader-electing controllers on one API server, the API
// writes of all of them counted (the Lease's renewals and events apart).
type replicaSet struct {
	b      *testing.B
	cfg    *rest.Config
	writes atomic.Int64
	ctls   []*controller.Controller
	stops  []func()
}

// countWrites counts the requests that change something, except the
// Lease renewals (a clock, not a publication) and events.
type countWrites struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c countWrites) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet && !strings.Contains(r.URL.Path, "/leases/") && !strings.Contains(r.URL.Path, "/leases") &&
		!strings.Contains(r.URL.Path, "/events") {
		c.n.Add(1)
	}
	return c.next.RoundTrip(r)
}

func (s *replicaSet) add(name string) {
	cfg := rest.CopyConfig(s.cfg)
	cfg.QPS, cfg.Burst = 500, 1000
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countWrites{next: rt, n: &s.writes} })
	crlog.SetLogger(logr.Discard())
	ctl, err := controller.New(controller.Options{
		Config: cfg, Namespace: "legate-system", XDSAddr: "127.0.0.1:0", HTTPAddr: "0", StateDir: s.b.TempDir(), Log: logr.Discard(),
		LeaderElect: true, Replica: name, LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 100 * time.Millisecond,
	})
	require.NoError(s.b, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctl.Run(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(s.b, <-done)
		}
	}
	s.b.Cleanup(stop)
	s.ctls = append(s.ctls, ctl)
	s.stops = append(s.stops, stop)
}

// leader waits for a leader among the live replicas.
func (s *replicaSet) leader() int {
	var lead int
	require.Eventually(s.b, func() bool {
		for i, ctl := range s.ctls {
			if s.stops[i] != nil && ctl.Leading() {
				lead = i
				return true
			}
		}
		return false
	}, time.Minute, time.Millisecond)
	return lead
}

func newReplicaSet(b *testing.B, n int) (*replicaSet, client.Client) {
	cluster := envtest.Start(b)
	fast := rest.CopyConfig(cluster.Config)
	fast.QPS, fast.Burst = 500, 1000
	c := ctltest.Client(b, fast)
	s := &replicaSet{b: b, cfg: cluster.Config}
	for i := range n {
		s.add(fmt.Sprintf("replica-%d", i))
	}
	s.leader()
	return s, c
}

// rawProxy is an xDS client as the protocol describes it: one ADS stream
// of node, named pod, subscribed to every cluster, ACKing each response.
func rawProxy(b *testing.B, addr, node, pod string) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(func() { cancel(); _ = conn.Close() })
	st, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	require.NoError(b, err)
	md, err := structpb.NewStruct(map[string]any{"pod_name": pod})
	require.NoError(b, err)
	id := &corev3.Node{Id: node, Metadata: md}
	require.NoError(b, st.Send(&discoveryv3.DiscoveryRequest{Node: id, TypeUrl: resourcev3.ClusterType}))
	go func() {
		for {
			resp, err := st.Recv()
			if err != nil {
				return
			}
			if st.Send(&discoveryv3.DiscoveryRequest{Node: id, TypeUrl: resourcev3.ClusterType, VersionInfo: resp.VersionInfo, ResponseNonce: resp.Nonce}) != nil {
				return
			}
		}
	}()
}

// BenchmarkReplicas measures three replicas on one API server: an update
// rejected by grpc-go clients of the followers (none on the leader) until
// the Rollback is visible on the EnvoyConfig, and the failover: the leader
// stops (stepping down, as on a rolling update) and the next update is
// served to a follower's client by the new leader.
func BenchmarkReplicas(b *testing.B) {
	s, c := newReplicaSet(b, 3)
	ctx := context.Background()
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
		xdsyaml.StaticCluster("y", y.Port))
	ec := &v1alpha1.EnvoyConfig{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: "default"}, Spec: good("x")}
	require.NoError(b, c.Create(ctx, ec))
	update := func(sp v1alpha1.EnvoyConfigSpec) {
		for {
			cur := &v1alpha1.EnvoyConfig{}
			require.NoError(b, c.Get(ctx, client.ObjectKeyFromObject(ec), cur))
			cur.Spec = sp
			if c.Update(ctx, cur) == nil {
				return
			}
		}
	}
	state := func() string {
		cur := &v1alpha1.EnvoyConfig{}
		require.NoError(b, c.Get(ctx, client.ObjectKeyFromObject(ec), cur))
		if cur.Status.CacheState == nil {
			return ""
		}
		return *cur.Status.CacheState
	}

	toRollback := make([]time.Duration, 0, b.N)
	failover := make([]time.Duration, 0, b.N)
	routes := []string{"y", "x"}
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		lead := s.leader()
		var clients []*backend.Client
		for j, ctl := range s.ctls {
			if j != lead && s.stops[j] != nil {
				clients = append(clients, backend.Dial(b, ctl.XDSAddr(), node, fmt.Sprintf("pod-%d-%d", i, j), "greeter"))
			}
		}
		to := routes[i%2]
		update(good(to))
		for _, cl := range clients {
			require.Eventually(b, func() bool { return cl.Call() == to }, time.Minute, time.Millisecond)
		}
		require.Eventually(b, func() bool { return state() == v1alpha1.CacheInSync }, time.Minute, 5*time.Millisecond)
		b.StartTimer()

		start := time.Now()
		update(bad)
		require.Eventually(b, func() bool { return state() == v1alpha1.CacheRollback }, time.Minute, time.Millisecond)
		toRollback = append(toRollback, time.Since(start))

		// The leader steps down; the next update is served by another.
		next := routes[(i+1)%2]
		start = time.Now()
		s.stops[lead]()
		s.stops[lead] = nil
		update(good(next))
		require.Eventually(b, func() bool { return clients[0].Call() == next }, time.Minute, time.Millisecond)
		failover = append(failover, time.Since(start))
		b.StopTimer()
		s.add(fmt.Sprintf("replica-%d", len(s.ctls)))
		b.StartTimer()
	}
	b.StopTimer()
	report(b, "follower-nack-to-rollback-condition", toRollback)
	report(b, "leader-stop-to-served-by-next", failover)
}

// BenchmarkReplicaWritesPerPublication counts the API server writes of
// three replicas (revisions, records, statuses, the followers' answer
// summaries; not the Lease renewals or events) per publication that their
// proxies accept, with 10 and 1 000 proxies of the node spread over the
// replicas: summaries are per replica and node, so the count does not
// grow with the proxies.
func BenchmarkReplicaWritesPerPublication(b *testing.B) {
	for _, proxies := range []int{10, 1000} {
		b.Run(fmt.Sprintf("proxies-%d", proxies), func(b *testing.B) {
			s, c := newReplicaSet(b, 3)
			ctx := context.Background()
			sp := func(gen int) v1alpha1.EnvoyConfigSpec {
				return spec(b, fmt.Sprintf(`{"@type":"type.googleapis.com/envoy.config.cluster.v3.Cluster","name":"c","type":"STATIC","connect_timeout":"%ds","load_assignment":{"cluster_name":"c","endpoints":[{"lb_endpoints":[{"endpoint":{"address":{"socket_address":{"address":"10.0.0.1","port_value":8080}}}}]}]}}`, gen+1))
			}
			ec := &v1alpha1.EnvoyConfig{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: "default"}, Spec: sp(0)}
			require.NoError(b, c.Create(ctx, ec))
			var wg sync.WaitGroup
			for p := range proxies {
				wg.Go(func() { rawProxy(b, s.ctls[p%len(s.ctls)].XDSAddr(), node, fmt.Sprintf("pod-%04d", p)) })
			}
			wg.Wait()
			accepted := func(gen int64) bool {
				cur := &v1alpha1.EnvoyConfig{}
				require.NoError(b, c.Get(ctx, client.ObjectKeyFromObject(ec), cur))
				return cur.Status.ObservedGeneration == gen && cur.Status.CacheState != nil && *cur.Status.CacheState == v1alpha1.CacheInSync &&
					cur.Status.Proxies != nil && cur.Status.Proxies.Accepted == proxies
			}
			require.Eventually(b, func() bool { return accepted(1) }, 2*time.Minute, 10*time.Millisecond)
			s.writes.Store(0)
			b.ResetTimer()
			for i := range b.N {
				cur := &v1alpha1.EnvoyConfig{}
				require.NoError(b, c.Get(ctx, client.ObjectKeyFromObject(ec), cur))
				cur.Spec = sp(i + 1)
				require.NoError(b, c.Update(ctx, cur)) // cur is now the stored object, with its new generation
				require.Eventually(b, func() bool { return accepted(cur.Generation) }, 2*time.Minute, 10*time.Millisecond)
			}
			b.StopTimer()
			b.ReportMetric(float64(s.writes.Load())/float64(b.N), "writes/publication")
		})
	}
}
