package controller_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/revisions/kubestore"
	"github.com/legate-dev/legate/statuspage"
	"github.com/legate-dev/legate/test/internal/backend"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
)

// envoyConfig makes an EnvoyConfig of node from resource documents
// (with "@type"), in MARIN3R's {type, value} form.
func envoyConfig(t *testing.T, node string, docs ...string) *v1alpha1.EnvoyConfig {
	t.Helper()
	ec, err := xdsyaml.EnvoyConfig(node, docs...)
	require.NoError(t, err)
	return ec
}

// A real grpc-go xDS client is served an EnvoyConfig applied to the API
// server; an edit it rejects is rolled back at once, the client keeps
// calling the good backend, and the EnvoyConfig says Rollback with
// grpc-go's own text.
func TestGRPCClientFollowsAnEnvoyConfig(t *testing.T) {
	t.Parallel()
	c, ctl := run(t)
	ctx := context.Background()
	a, b := backend.Start(t, "a"), backend.Start(t, "b")
	good := func(route string) []string {
		return []string{
			xdsyaml.APIListener("greeter", "greeter", "routes"),
			xdsyaml.RouteConfiguration("routes", "greeter", xdsyaml.Route{Cluster: route}),
			xdsyaml.EDSCluster("a"), xdsyaml.Endpoints("a", a.Port),
			xdsyaml.EDSCluster("b"), xdsyaml.Endpoints("b", b.Port),
		}
	}
	ec := envoyConfig(t, "grpc-client", good("a")...)
	require.NoError(t, c.Create(ctx, ec))
	grpcClient := backend.Dial(t, ctl.XDSAddr(), "grpc-client", "pod-1", "greeter")
	require.Eventually(t, func() bool { return grpcClient.Call() == "a" }, 60*time.Second, 50*time.Millisecond, "RPCs land on a")
	require.Eventually(t, func() bool {
		got := get(t, c, ec)
		return got.Status.Proxies != nil && got.Status.Proxies.Accepted == 1 && got.Status.CacheState != nil && *got.Status.CacheState == v1alpha1.CacheInSync
	}, 60*time.Second, 50*time.Millisecond, "the proxy's ACK is counted")
	goodVersion := *get(t, c, ec).Status.PublishedVersion

	// Route to a static cluster: valid Envoy, but grpc-go refuses it.
	bad := envoyConfig(t, "grpc-client",
		xdsyaml.APIListener("greeter", "greeter", "routes"),
		xdsyaml.RouteConfiguration("routes", "greeter", xdsyaml.Route{Cluster: "b"}),
		xdsyaml.EDSCluster("a"), xdsyaml.Endpoints("a", a.Port),
		xdsyaml.StaticCluster("b", b.Port),
	)
	cur := get(t, c, ec)
	cur.Spec = bad.Spec
	require.NoError(t, c.Update(ctx, cur))
	var got *v1alpha1.EnvoyConfig
	require.Eventually(t, func() bool {
		got = get(t, c, ec)
		return got.Status.CacheState != nil && *got.Status.CacheState == v1alpha1.CacheRollback
	}, 60*time.Second, 50*time.Millisecond, "the rejected revision is rolled back")
	assert.Equal(t, goodVersion, *got.Status.PublishedVersion, "the last good revision is served again")
	assert.NotEqual(t, goodVersion, *got.Status.DesiredVersion)
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, "False", string(ready.Status))
	assert.Contains(t, got.Status.Rejection, "rejected by 1 of 1 proxies")
	assert.Contains(t, got.Status.Rejection, "pod-1")
	for range 20 {
		require.Equal(t, "a", grpcClient.Call(), "the client keeps the good configuration")
	}

	// Untaint, as `legate untaint --kubeconfig` does it: the annotation
	// is handled and taken away, the revision is offered again, grpc-go
	// rejects it again, and the last good one is served again.
	_, err := kubestore.RequestUntaint(ctx, c, "legate-system", "grpc-client", "ffffffffffff")
	assert.ErrorContains(t, err, "node grpc-client has no revision ffffffffffff")
	before := taintedAt(t, ctl, "grpc-client", *got.Status.DesiredVersion)
	require.False(t, before.IsZero())
	untaintCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	hash, err := kubestore.RequestUntaint(untaintCtx, c, "legate-system", "grpc-client", *got.Status.DesiredVersion)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(hash, *got.Status.DesiredVersion))
	require.Eventually(t, func() bool {
		var evs eventsv1.EventList
		require.NoError(t, c.List(ctx, &evs, client.InNamespace("legate-system")))
		for _, ev := range evs.Items {
			if ev.Reason == "Untainted" && ev.Regarding.Name == kubestore.RevisionName("grpc-client", hash) && strings.Contains(ev.Note, "is cleared") {
				return true
			}
		}
		return false
	}, 60*time.Second, 50*time.Millisecond, "the untaint is recorded on the revision")
	require.Eventually(t, func() bool {
		var rev v1alpha1.EnvoyConfigRevision
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "legate-system", Name: kubestore.RevisionName("grpc-client", hash)}, &rev))
		g := get(t, c, ec)
		return rev.Status.Tainted && g.Status.CacheState != nil && *g.Status.CacheState == v1alpha1.CacheRollback &&
			taintedAt(t, ctl, "grpc-client", hash).After(before)
	}, 60*time.Second, 50*time.Millisecond, "the taint was cleared: grpc-go was offered the revision, rejected it again, and it is rolled back again")
	assert.Equal(t, "a", grpcClient.Call())
}

// taintedAt is when the revision of node whose hash starts with prefix was
// last tainted, as the controller's status API says (zero: not tainted).
func taintedAt(t *testing.T, ctl *controller.Controller, node, prefix string) time.Time {
	t.Helper()
	resp, err := http.Get("http://" + ctl.HTTPAddr() + "/api/v1/nodes/" + node)
	require.NoError(t, err)
	defer resp.Body.Close()
	var view statuspage.NodeView
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&view))
	for _, h := range view.History {
		if strings.HasPrefix(h.Hash, prefix) && h.Taint != nil {
			return h.Taint.At
		}
	}
	return time.Time{}
}
