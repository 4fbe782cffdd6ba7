package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/retry"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/backend"
	"github.com/legate-dev/legate/test/internal/ctltest"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
)

// podIn returns a pod name whose proxy falls inside (or outside) a share
// of basis points, as the xDS server buckets a proxy without a
// certificate: by its pod name.
func podIn(t *testing.T, inside bool, share int) string {
	t.Helper()
	for i := range 1000 {
		pod := fmt.Sprintf("pod-%d", i)
		if rollout.InShare(rollout.ProxyBucket("", pod, "", ""), share) == inside {
			return pod
		}
	}
	t.Fatal("no pod name found")
	return ""
}

// An EnvoyConfig with spec.rollout: its first revision reaches every
// proxy; an update reaches the proxies of the first step's share only (a
// real grpc-go client on each side), and the rollout then waits at its
// untimed pause with the other proxy still on the first revision, until
// `kubectl annotate … legate.dev/rollout=promote` lets it through.
func TestEnvoyConfigRollsOutToItsCanariesFirst(t *testing.T) {
	t.Parallel()
	cluster := envtest.Start(t)
	c := ctltest.Client(t, cluster.Config)
	ctl := start(t, cluster.Config)
	ctx := context.Background()
	a, b := backend.Start(t, "a"), backend.Start(t, "b")
	namespaces(t, c, "team-a")

	half := "50%"
	ec := payConfig(t, "team-a", a.Port)
	ec.Spec.Rollout = &v1alpha1.RolloutSpec{Steps: []v1alpha1.RolloutStep{{Proxies: &half}, {Pause: &v1alpha1.RolloutPause{}}}}
	require.NoError(t, c.Create(ctx, ec))
	canary := backend.Dial(t, ctl.XDSAddr(), "pay-edge", podIn(t, true, 5000), "greeter")
	other := backend.Dial(t, ctl.XDSAddr(), "pay-edge", podIn(t, false, 5000), "greeter")
	require.Eventually(t, func() bool { return canary.Call() == "a" && other.Call() == "a" }, 60*time.Second, 50*time.Millisecond,
		"the first revision has nothing to roll out over: every proxy gets it")

	update := func(change func(*v1alpha1.EnvoyConfig)) {
		t.Helper()
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			latest := get(t, c, ec)
			change(latest)
			return c.Update(ctx, latest)
		}))
	}
	update(func(ec *v1alpha1.EnvoyConfig) {
		again, err := xdsyaml.EnvoyConfig("pay-edge",
			xdsyaml.APIListener("greeter", "greeter", "routes"),
			xdsyaml.RouteConfiguration("routes", "greeter", xdsyaml.Route{Cluster: "a"}),
			xdsyaml.EDSCluster("a"), xdsyaml.Endpoints("a", b.Port))
		require.NoError(t, err)
		ec.Spec.Resources = again.Spec.Resources
	})
	require.Eventually(t, func() bool { return canary.Call() == "b" }, 60*time.Second, 50*time.Millisecond, "the canary gets the update")
	// The step's gates pass once the canary ACKed; the rollout then waits
	// at pause {}: the other proxy stays on the first revision meanwhile.
	require.Eventually(t, func() bool { return get(t, c, ec).Status.State == "Progressing" }, 60*time.Second, 50*time.Millisecond,
		"the object says its node is rolling out")
	for range 20 {
		require.Equal(t, "a", other.Call(), "a proxy outside the step's share never sees the candidate")
	}

	update(func(ec *v1alpha1.EnvoyConfig) {
		if ec.Annotations == nil {
			ec.Annotations = map[string]string{}
		}
		ec.Annotations[v1alpha1.RolloutAnnotation] = "promote"
	})
	require.Eventually(t, func() bool { return other.Call() == "b" }, 60*time.Second, 50*time.Millisecond, "promote lets the update through to every proxy")
	require.Eventually(t, func() bool {
		_, still := get(t, c, ec).Annotations[v1alpha1.RolloutAnnotation]
		return !still
	}, 60*time.Second, 50*time.Millisecond, "the handled annotation is removed")
}
