package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/backend"
	"github.com/legate-dev/legate/test/internal/ctltest"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
)

// BenchmarkRollbackSeenByKubectl times what a user sees: `kubectl apply`
// of an EnvoyConfig update that the proxy (a real grpc-go xDS client)
// rejects, then `kubectl get envoyconfig` in a loop until it shows
// cacheState Rollback. The update is a PATCH of the spec, as kubectl
// apply sends it; the loop is a second client, with its own connection,
// reading through the API server every 10 ms. Each iteration first puts
// a good configuration back and waits until it is InSync and in use.
//
// "as-installed" runs the controller as config/manager does (one replica
// with --leader-elect, the election's default timings); "no-election"
// without leader election, as BenchmarkEnvoyConfig does. Besides the
// total it reports when the new generation was first seen reconciled
// (the render and the revision's store writes) and the rest (the push,
// grpc-go's NACK, the rollback and its status write).
func BenchmarkRollbackSeenByKubectl(b *testing.B) {
	for _, tc := range []struct {
		name   string
		change func(*controller.Options)
	}{
		{"as-installed", func(o *controller.Options) { o.LeaderElect, o.Replica = true, "legate-0" }},
		{"no-election", func(*controller.Options) {}},
		// `legate controller --kubeconfig FILE` as the command's help
		// shows it: client-go's defaults where the file sets no rate.
		{"as-installed-kubeconfig-flag", func(o *controller.Options) {
			o.LeaderElect, o.Replica = true, "legate-0"
			o.Config = rest.CopyConfig(o.Config)
			o.Config.QPS, o.Config.Burst = 0, 0
		}},
	} {
		b.Run(tc.name, func(b *testing.B) { rollbackSeenByKubectl(b, tc.change) })
	}
}

func rollbackSeenByKubectl(b *testing.B, change func(*controller.Options)) {
	cluster := envtest.Start(b)
	c := ctltest.Client(b, cluster.Config)
	// kubectl get is another process: another client, another connection.
	watcherCfg := rest.CopyConfig(cluster.Config)
	watcherCfg.UserAgent = "kubectl-get-loop"
	watcherCfg.QPS, watcherCfg.Burst = -1, 0 // kubectl's loop is not throttled across processes
	watcher, err := client.New(watcherCfg, client.Options{Scheme: c.Scheme()})
	require.NoError(b, err)
	ctx := context.Background()
	ctl := start(b, cluster.Config, change)
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
	require.Eventually(b, func() bool { return grpcClient.Call() == "x" }, 2*time.Minute, 10*time.Millisecond)

	apply := func(s v1alpha1.EnvoyConfigSpec) {
		patch, err := json.Marshal(map[string]any{"spec": s})
		require.NoError(b, err)
		require.NoError(b, c.Patch(ctx, &v1alpha1.EnvoyConfig{ObjectMeta: ec.ObjectMeta}, client.RawPatch("application/merge-patch+json", patch)))
	}
	get := func() *v1alpha1.EnvoyConfig {
		cur := &v1alpha1.EnvoyConfig{}
		require.NoError(b, watcher.Get(ctx, client.ObjectKeyFromObject(ec), cur))
		return cur
	}
	cacheState := func(cur *v1alpha1.EnvoyConfig) string {
		if cur.Status.CacheState == nil {
			return ""
		}
		return *cur.Status.CacheState
	}
	var total, reconciled, rest []time.Duration
	routes := []string{"y", "x"}
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		to := routes[i%2]
		apply(good(to))
		require.Eventually(b, func() bool { return grpcClient.Call() == to }, time.Minute, 5*time.Millisecond)
		require.Eventually(b, func() bool { return cacheState(get()) == v1alpha1.CacheInSync }, time.Minute, 10*time.Millisecond)
		gen := get().Generation + 1
		b.StartTimer()

		start := time.Now()
		apply(bad)
		var seen time.Duration
		require.Eventually(b, func() bool {
			cur := get()
			if seen == 0 && cur.Status.ObservedGeneration >= gen {
				seen = time.Since(start)
			}
			return cacheState(cur) == v1alpha1.CacheRollback
		}, time.Minute, 10*time.Millisecond, "iteration %d: cacheState Rollback", i)
		took := time.Since(start)
		if seen == 0 {
			seen = took
		}
		total, reconciled, rest = append(total, took), append(reconciled, seen), append(rest, took-seen)
		require.Equal(b, to, grpcClient.Call(), "the client stays on the last good configuration")
	}
	b.StopTimer()
	report(b, "apply-to-rollback-shown", total)
	report(b, "apply-to-generation-observed", reconciled)
	report(b, "observed-to-rollback-shown", rest)
	b.Logf("%d iterations: apply to Rollback shown %v", len(total), fmt.Sprint(total))
}
