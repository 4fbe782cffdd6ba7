package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/backend"
	"github.com/legate-dev/legate/test/internal/ctltest"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
)

// A controller restart keeps taints and publications: the revisions in
// the API server are read back, the last good one is served to a new
// grpc-go client at once (before any reconcile), the rejected one stays
// tainted and is not offered again, and the EnvoyConfig still says
// Rollback.
func TestRestartKeepsTaintsAndPublications(t *testing.T) {
	t.Parallel()
	cluster := envtest.Start(t)
	c := ctltest.Client(t, cluster.Config)
	ctx := context.Background()
	a, b := backend.Start(t, "a"), backend.Start(t, "b")
	first := startReplicaless(t, cluster.Config)

	ec := envoyConfig(t, "restart",
		xdsyaml.APIListener("greeter", "greeter", "routes"),
		xdsyaml.RouteConfiguration("routes", "greeter", xdsyaml.Route{Cluster: "a"}),
		xdsyaml.EDSCluster("a"), xdsyaml.Endpoints("a", a.Port),
	)
	require.NoError(t, c.Create(ctx, ec))
	client1 := backend.Dial(t, first.ctl.XDSAddr(), "restart", "pod-1", "greeter")
	require.Eventually(t, func() bool { return client1.Call() == "a" }, 60*time.Second, 50*time.Millisecond)
	good := waitPublished(t, c, ec, v1alpha1.CacheInSync)

	bad := envoyConfig(t, "restart",
		xdsyaml.APIListener("greeter", "greeter", "routes"),
		xdsyaml.RouteConfiguration("routes", "greeter", xdsyaml.Route{Cluster: "b"}),
		xdsyaml.EDSCluster("a"), xdsyaml.Endpoints("a", a.Port),
		xdsyaml.StaticCluster("b", b.Port), // grpc-go refuses it
	)
	cur := get(t, c, ec)
	cur.Spec = bad.Spec
	require.NoError(t, c.Update(ctx, cur))
	assert.Equal(t, good, waitPublished(t, c, ec, v1alpha1.CacheRollback), "rolled back to the good revision")
	tainted := taintedRevisions(t, c, "restart")
	require.Len(t, tainted, 1)

	first.stop()
	second := startReplicaless(t, cluster.Config)
	client2 := backend.Dial(t, second.ctl.XDSAddr(), "restart", "pod-2", "greeter")
	require.Eventually(t, func() bool { return client2.Call() == "a" }, 60*time.Second, 50*time.Millisecond, "the good revision is served after the restart")
	assert.Equal(t, tainted, taintedRevisions(t, c, "restart"), "the taint is kept")
	got := waitPublished(t, c, ec, v1alpha1.CacheRollback)
	assert.Equal(t, good, got, "the EnvoyConfig still says Rollback to the good revision")
	for range 10 {
		require.Equal(t, "a", client2.Call(), "the rejected revision is not offered again")
	}
}

// startReplicaless runs a single controller (no leader election) that the
// test can stop and replace.
func startReplicaless(t *testing.T, cfg *rest.Config) *haReplica {
	t.Helper()
	return startController(t, cfg, controller.Options{})
}

// waitPublished waits until the EnvoyConfig says state and returns its
// published version.
func waitPublished(t *testing.T, c client.Client, ec *v1alpha1.EnvoyConfig, state string) string {
	t.Helper()
	var got *v1alpha1.EnvoyConfig
	require.Eventually(t, func() bool {
		got = get(t, c, ec)
		return got.Status.CacheState != nil && *got.Status.CacheState == state && got.Status.PublishedVersion != nil
	}, 60*time.Second, 50*time.Millisecond, "cacheState %s", state)
	return *got.Status.PublishedVersion
}

// taintedRevisions are the names of node's tainted revisions.
func taintedRevisions(t *testing.T, c client.Client, node string) []string {
	t.Helper()
	var list v1alpha1.EnvoyConfigRevisionList
	require.NoError(t, c.List(context.Background(), &list, client.InNamespace("legate-system")))
	var out []string
	for _, r := range list.Items {
		if r.Spec.NodeID == node && r.Status.Tainted {
			out = append(out, r.Name)
		}
	}
	return out
}
