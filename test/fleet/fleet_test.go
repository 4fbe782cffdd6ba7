package fleet_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/pipeline/readiness"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/ctltest"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
)

// This package holds the fleet-wide test alone, so that it runs beside
// test/controller (go test runs packages in parallel) rather than after it
// within one binary's timeout.

// envoyConfig is an EnvoyConfig of node with the given resource documents.
func envoyConfig(t *testing.T, node string, docs ...string) *v1alpha1.EnvoyConfig {
	t.Helper()
	ec, err := xdsyaml.EnvoyConfig(node, docs...)
	require.NoError(t, err)
	return ec
}

// fleetSize is the number of EnvoyConfigs that roll back at once: four
// times the 256 requests the controller's event channel held before
// requests went through each reconciler's own work queue.
// LEGATE_FLEET_SIZE sets another (a loaded machine: at least 257).
var fleetSize = func() int {
	if n, err := strconv.Atoi(os.Getenv("LEGATE_FLEET_SIZE")); err == nil && n > 0 {
		return n
	}
	return 1000
}()

// pickyProxy is one proxy of a node on an ADS stream: it accepts the first
// clusters it is sent, and every response that carries them again (a
// rollback), and rejects any other.
type pickyProxy struct {
	stream discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	node   *corev3.Node
	first  chan struct{} // closed once the first clusters are accepted
}

func startPickyProxy(t *testing.T, ctx context.Context, conn *grpc.ClientConn, node string) *pickyProxy {
	t.Helper()
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	require.NoError(t, err)
	p := &pickyProxy{stream: stream, node: &corev3.Node{Id: node, Cluster: "fleet"}, first: make(chan struct{})}
	require.NoError(t, stream.Send(&discoveryv3.DiscoveryRequest{Node: p.node, TypeUrl: resourcev3.ClusterType}))
	go p.answer()
	return p
}

func (p *pickyProxy) answer() {
	var good *discoveryv3.DiscoveryResponse
	for {
		resp, err := p.stream.Recv()
		if err != nil {
			return // the test ended
		}
		req := &discoveryv3.DiscoveryRequest{Node: p.node, TypeUrl: resourcev3.ClusterType, ResponseNonce: resp.Nonce}
		switch {
		case good == nil && len(resp.Resources) > 0:
			good = resp
			req.VersionInfo = resp.VersionInfo
			close(p.first)
		case good != nil && sameResources(good, resp):
			req.VersionInfo = resp.VersionInfo
		default:
			req.VersionInfo = good.GetVersionInfo()
			req.ErrorDetail = &statuspb.Status{Code: 3, Message: "fleet proxy: refused"}
		}
		if p.stream.Send(req) != nil {
			return
		}
	}
}

func sameResources(a, b *discoveryv3.DiscoveryResponse) bool {
	if len(a.Resources) != len(b.Resources) {
		return false
	}
	for i := range a.Resources {
		if !proto.Equal(a.Resources[i], b.Resources[i]) {
			return false
		}
	}
	return true
}

// apiCalls counts the requests a client makes, by verb and resource.
type apiCalls struct {
	mu     sync.Mutex
	byKind map[string]int
}

func (a *apiCalls) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		kind := req.Method + " " + resourceOf(req.URL.Path)
		if req.URL.Query().Get("watch") == "true" {
			kind = "WATCH " + resourceOf(req.URL.Path)
		}
		a.mu.Lock()
		a.byKind[kind]++
		a.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

func (a *apiCalls) reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.byKind)
}

// perObject is the requests counted since the last reset, per object,
// the most frequent first.
func (a *apiCalls) perObject(objects int) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	kinds := slices.Collect(maps.Keys(a.byKind))
	slices.SortFunc(kinds, func(x, y string) int { return a.byKind[y] - a.byKind[x] })
	total := 0
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		total += a.byKind[k]
		if a.byKind[k]*100 >= objects { // 0.01 a object or more
			parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(a.byKind[k])/float64(objects)))
		}
	}
	return fmt.Sprintf("%.2f (%s)", float64(total)/float64(objects), strings.Join(parts, ", "))
}

// resourceOf is the resource (and subresource) a request path names:
// /apis/legate.dev/v1alpha1/namespaces/default/envoyconfigs/x/status is
// envoyconfigs/status.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "namespaces" {
			parts = parts[i+2:]
			break
		}
	}
	if len(parts) > 0 && (parts[0] == "api" || parts[0] == "apis") {
		return path // a cluster-wide list or discovery
	}
	switch len(parts) {
	case 0:
		return path
	case 1, 2:
		return parts[0]
	default:
		return parts[0] + "/" + parts[2]
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A fleet of EnvoyConfigs whose new revisions every proxy rejects at once
// all end up saying Rollback: no object's status is left stale, however
// many roll back together.
func TestFleetRollbackReachesEveryStatus(t *testing.T) {
	cluster := envtest.Start(t)
	// client-go's default rate (5/s) would make the client the
	// measurement; the API server's time is what is measured.
	fast := rest.CopyConfig(cluster.Config)
	fast.QPS, fast.Burst = 1000, 2000
	c := ctltest.Client(t, fast)
	calls := &apiCalls{byKind: map[string]int{}}
	counted := rest.CopyConfig(fast)
	counted.WrapTransport = calls.wrap
	ctl := ctltest.Start(t, ctltest.Options(t, counted))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	ecOf := func(i, port int) *v1alpha1.EnvoyConfig {
		ec := envoyConfig(t, fmt.Sprintf("fleet-%04d", i), xdsyaml.StaticCluster("c", port))
		ec.Name = ec.Spec.NodeID
		return ec
	}
	// parallel runs fn for every object, on a few workers.
	parallel := func(fn func(i int) error) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, fleetSize)
		next := make(chan int)
		for range 16 {
			wg.Go(func() {
				for i := range next {
					if err := fn(i); err != nil {
						errs <- err
					}
				}
			})
		}
		for i := range fleetSize {
			next <- i
		}
		close(next)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
	}
	// states counts the objects by their cache state.
	states := func() map[string]int {
		var list v1alpha1.EnvoyConfigList
		require.NoError(t, c.List(ctx, &list, client.InNamespace("default")))
		out := map[string]int{}
		for _, ec := range list.Items {
			if ec.Status.CacheState != nil && ec.Status.ObservedGeneration == ec.Generation {
				out[*ec.Status.CacheState]++
			}
		}
		return out
	}

	began := time.Now()
	calls.reset()
	parallel(func(i int) error { return c.Create(ctx, ecOf(i, 1000)) })
	var last map[string]int
	require.Eventually(t, func() bool { last = states(); return last[v1alpha1.CacheInSync] == fleetSize },
		10*time.Minute, time.Second, "every object is published")
	published := time.Since(began)

	t.Logf("%d EnvoyConfigs created and published in %s; the controller's API requests per object: %s",
		fleetSize, published.Round(time.Millisecond), calls.perObject(fleetSize))

	// The xDS server takes 16 streams per connection (xds/bound.go).
	const streamsPerConn = 16
	proxies := make([]*pickyProxy, fleetSize)
	var conn *grpc.ClientConn
	for i := range proxies {
		if i%streamsPerConn == 0 {
			cc, err := grpc.NewClient(ctl.XDSAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			require.NoError(t, err)
			t.Cleanup(func() { _ = cc.Close() })
			conn = cc
		}
		proxies[i] = startPickyProxy(t, ctx, conn, fmt.Sprintf("fleet-%04d", i))
	}
	for i, p := range proxies {
		select {
		case <-p.first:
		case <-time.After(time.Minute):
			t.Fatalf("proxy of fleet-%04d got no clusters", i)
		}
	}

	began = time.Now()
	calls.reset()
	parallel(func(i int) error {
		cur := &v1alpha1.EnvoyConfig{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ecOf(i, 0)), cur); err != nil {
			return err
		}
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Spec = ecOf(i, 2000).Spec
		return c.Patch(ctx, cur, patch)
	})
	updated := time.Since(began)
	if !assert.Eventually(t, func() bool { last = states(); return last[v1alpha1.CacheRollback] == fleetSize },
		10*time.Minute, time.Second, "every object says Rollback") {
		t.Fatalf("objects by the cache state their status says, of this generation: %v", last)
	}
	rolledBack := time.Since(began)
	t.Logf("%d EnvoyConfigs updated in %s; every status says Rollback %s after the first update; the controller's API requests per object: %s",
		fleetSize, updated.Round(time.Millisecond), rolledBack.Round(time.Millisecond), calls.perObject(fleetSize))

	var list v1alpha1.EnvoyConfigList
	require.NoError(t, c.List(ctx, &list, client.InNamespace("default")))
	require.Len(t, list.Items, fleetSize)
	for _, ec := range list.Items {
		ready := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionReady)
		if assert.NotNil(t, ready, ec.Name) {
			assert.Equal(t, readiness.ReasonRollback, ready.Reason, ec.Name)
		}
		assert.Contains(t, ec.Status.Rejection, "fleet proxy: refused", ec.Name)
	}
}
