package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/core"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/ctltest"
)

// The knobs both homes share reach the controller: --history bounds the
// revisions kept (EnvoyConfigRevision objects, the object's status), and
// --xds-insecure lets it serve xDS beyond loopback without mutual TLS, the
// same rule and escape hatch as legate serve (core.Tuning).
func TestControllerTakesTheSharedTuning(t *testing.T) {
	t.Parallel()
	cluster := envtest.Start(t)
	c := ctltest.Client(t, cluster.Config)
	ctl := startWith(t, cluster.Config, func(o *controller.Options) {
		o.XDSAddr = "0.0.0.0:0"
		o.Tuning = core.Tuning{History: 2, XDSInsecure: true}
	})
	assert.NotEmpty(t, ctl.XDSAddr())

	ctx := context.Background()
	ec := sample(t)
	require.NoError(t, c.Create(ctx, ec))
	// Three contents, each published in turn.
	for i := range 3 {
		var got *v1alpha1.EnvoyConfig
		require.Eventually(t, func() bool {
			got = get(t, c, ec)
			return got.Status.ObservedGeneration == got.Generation && got.Status.CacheState != nil && *got.Status.CacheState == v1alpha1.CacheInSync &&
				got.Status.DesiredVersion != nil && listed(got.Status.ConfigRevisions, *got.Status.DesiredVersion)
		}, 60*time.Second, 50*time.Millisecond, "content %d is published", i)
		if i < 2 {
			// The controller writes the status meanwhile: retry on a conflict
			// as kubectl edit would.
			require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
				latest := get(t, c, ec)
				latest.Spec.Resources[0].Value.Raw = fmt.Appendf(nil, `{"name":"backend","type":"STRICT_DNS","connect_timeout":"%ds"}`, i+1)
				return c.Update(ctx, latest)
			}))
		}
	}
	require.Eventually(t, func() bool { return len(get(t, c, ec).Status.ConfigRevisions) == 2 }, 60*time.Second, 50*time.Millisecond,
		"--history 2 keeps two revisions in the status")
	require.Eventually(t, func() bool {
		var revs v1alpha1.EnvoyConfigRevisionList
		require.NoError(t, c.List(ctx, &revs))
		return len(revs.Items) == 2
	}, 60*time.Second, 50*time.Millisecond, "and two EnvoyConfigRevision objects")
}

// listed reports whether version is one of revs.
func listed(revs []v1alpha1.ConfigRevisionRef, version string) bool {
	for _, r := range revs {
		if r.Version == version {
			return true
		}
	}
	return false
}

// A bad knob is refused before anything starts, naming its field and flag.
func TestControllerRefusesABadKnob(t *testing.T) {
	t.Parallel()
	_, err := controller.New(controller.Options{
		Config: &rest.Config{Host: "https://127.0.0.1:1"}, Namespace: "legate-system",
		Tuning: core.Tuning{TaintThreshold: 2},
	})
	assert.ErrorContains(t, err, "taintThreshold (--taint-threshold): must be in (0, 1], got 2")
}
