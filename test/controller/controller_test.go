package controller_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/pipeline/readiness"
	"github.com/legate-dev/legate/render"
	legatecue "github.com/legate-dev/legate/render/cue"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/ctltest"
)

// run starts a controller on a fresh API server and returns a client.
func run(t *testing.T) (client.Client, *controller.Controller) {
	t.Helper()
	cluster := envtest.Start(t)
	c := ctltest.Client(t, cluster.Config)
	return c, start(t, cluster.Config)
}

// schema is the generated CUE schema, shared by every render as legate
// controller shares it.
var schema = sync.OnceValue(legatecue.NewSchema)

// renderOptions are legate controller's: the CUE stage with the policies
// the controller imposes.
func renderOptions(policies map[string][]byte) render.Options {
	stage := legatecue.NewStage(schema()).WithPolicies(policies)
	return render.Options{Generators: []render.Generator{stage}, Checks: []render.Check{stage}}
}

// loopback is where the tests' Gitea, registries and Flux artifact
// servers listen: the tests opt in to fetching from it, which legate
// controller refuses by default (--fetch-allow-networks).
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// start runs a controller with cfg until the test ends.
func start(t *testing.T, cfg *rest.Config) *controller.Controller {
	t.Helper()
	return startWatching(t, cfg, "")
}

// startWatching runs a controller that reconciles the objects of
// namespace only ("" for every namespace).
func startWatching(t *testing.T, cfg *rest.Config, namespace string) *controller.Controller {
	t.Helper()
	return startWith(t, cfg, func(o *controller.Options) { o.WatchNamespace = namespace })
}

// startWith runs a controller with the tests' options as change leaves
// them.
func startWith(t *testing.T, cfg *rest.Config, change func(*controller.Options)) *controller.Controller {
	t.Helper()
	opts := ctltest.Options(t, cfg)
	opts.HTTPAddr, opts.Render, opts.FetchAllowNetworks = "127.0.0.1:0", renderOptions, loopback
	change(&opts)
	return ctltest.Start(t, opts)
}

// sample is config/samples/envoyconfig.yaml without its TLS secret (no
// Secret exists in most tests).
func sample(t *testing.T) *v1alpha1.EnvoyConfig {
	t.Helper()
	ec := sampleFull(t)
	ec.Spec.Resources = ec.Spec.Resources[:2]
	return ec
}

// sampleFull is config/samples/envoyconfig.yaml as it is.
func sampleFull(t *testing.T) *v1alpha1.EnvoyConfig {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "envoyconfig.yaml"))
	require.NoError(t, err)
	var ec v1alpha1.EnvoyConfig
	require.NoError(t, yaml.UnmarshalStrict(data, &ec))
	ec.Namespace = "default"
	return &ec
}

func get(t *testing.T, c client.Client, ec *v1alpha1.EnvoyConfig) *v1alpha1.EnvoyConfig {
	t.Helper()
	var out v1alpha1.EnvoyConfig
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(ec), &out))
	return &out
}

// An EnvoyConfig applied with kubectl is validated, stored as a revision
// object, published and reported InSync; a broken edit is refused with
// the renderer's file:line message and the last good revision stays
// published.
func TestEnvoyConfigIsPublishedAndReported(t *testing.T) {
	t.Parallel()
	c, _ := run(t)
	ctx := context.Background()
	ec := sample(t)
	require.NoError(t, c.Create(ctx, ec))

	var got *v1alpha1.EnvoyConfig
	require.Eventually(t, func() bool {
		got = get(t, c, ec)
		return got.Status.CacheState != nil && *got.Status.CacheState == v1alpha1.CacheInSync
	}, 60*time.Second, 50*time.Millisecond, "the EnvoyConfig is reported InSync")
	require.NotNil(t, got.Status.PublishedVersion)
	assert.Equal(t, *got.Status.DesiredVersion, *got.Status.PublishedVersion)
	assert.Equal(t, "default/edge@1", got.Status.Commit)
	assert.Equal(t, got.Generation, got.Status.ObservedGeneration)
	assert.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady))
	require.Len(t, got.Status.ConfigRevisions, 1)
	var rev v1alpha1.EnvoyConfigRevision
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "legate-system", Name: got.Status.ConfigRevisions[0].Ref.Name}, &rev))
	assert.Equal(t, "edge", rev.Spec.NodeID)
	published := *got.Status.PublishedVersion

	// A reconcile asked for the way `flux reconcile` asks is handled and
	// echoed.
	requestReconcile(t, c, got, "2026-11-24T12:00:00Z")
	require.Eventually(t, func() bool {
		return get(t, c, ec).Status.LastHandledReconcileAt == "2026-11-24T12:00:00Z"
	}, 60*time.Second, 50*time.Millisecond, "lastHandledReconcileAt echoes the request")
	got = get(t, c, ec)

	// A broken edit: a cluster with a negative timeout.
	got.Spec.Resources[0].Value.Raw = []byte(`{"name":"backend","type":"STRICT_DNS","connect_timeout":"-1s"}`)
	require.NoError(t, c.Update(ctx, got))
	require.Eventually(t, func() bool {
		got = get(t, c, ec)
		return got.Status.ObservedGeneration == got.Generation && meta.IsStatusConditionFalse(got.Status.Conditions, v1alpha1.ConditionReady)
	}, 60*time.Second, 50*time.Millisecond, "the broken edit is reported")
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	assert.Equal(t, readiness.ReasonValidationFailed, ready.Reason)
	assert.Contains(t, ready.Message, "EnvoyConfig default/edge spec.resources[0].value.connect_timeout", "the object and the field path, not a line of legate's own document")
	assert.Contains(t, ready.Message, "connect_timeout")
	assert.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionStalled))
	assert.Equal(t, published, *got.Status.PublishedVersion, "the last good revision stays published")

	// Both turns were announced as events on the object.
	require.Eventually(t, func() bool {
		var evs eventsv1.EventList
		require.NoError(t, c.List(ctx, &evs, client.InNamespace("default")))
		reasons := map[string]string{}
		for _, ev := range evs.Items {
			if ev.Regarding.Name == "edge" && ev.Regarding.Kind == "EnvoyConfig" {
				reasons[ev.Reason] = ev.Type
			}
		}
		return reasons[readiness.EventPublished] == "Normal" && reasons[readiness.EventRejected] == "Warning"
	}, 60*time.Second, 50*time.Millisecond, "events for the publication and the rejected edit")

	// Deleting the EnvoyConfig stops serving its node: its revisions go.
	require.NoError(t, c.Delete(ctx, got))
	require.Eventually(t, func() bool {
		var revs v1alpha1.EnvoyConfigRevisionList
		require.NoError(t, c.List(ctx, &revs, client.InNamespace("legate-system")))
		return len(revs.Items) == 0
	}, 60*time.Second, 50*time.Millisecond, "the deleted EnvoyConfig's revisions are removed")
}
