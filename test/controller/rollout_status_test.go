package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/backend"
	"github.com/legate-dev/legate/test/internal/ctltest"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
)

// eventsOf are the events recorded on the object kind/namespace/name, by
// reason: their notes.
func eventsOf(t *testing.T, c client.Client, kind, namespace, name string) map[string][]string {
	t.Helper()
	var evs eventsv1.EventList
	require.NoError(t, c.List(context.Background(), &evs, client.InNamespace(namespace)))
	out := map[string][]string{}
	for _, ev := range evs.Items {
		if ev.Regarding.Kind == kind && ev.Regarding.Name == name {
			out[ev.Reason] = append(out[ev.Reason], ev.Type+": "+ev.Note)
		}
	}
	return out
}

// annotate sets the legate.dev/rollout annotation of obj to cmd.
func annotate(t *testing.T, c client.Client, obj client.Object, cmd string) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		ann := obj.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[v1alpha1.RolloutAnnotation] = cmd
		obj.SetAnnotations(ann)
		return c.Update(context.Background(), obj)
	}))
}

// greeterTo is pay-edge's configuration routing to a backend on port.
func greeterTo(t *testing.T, port int) v1alpha1.EnvoyConfigSpec {
	t.Helper()
	ec, err := xdsyaml.EnvoyConfig("pay-edge",
		xdsyaml.APIListener("greeter", "greeter", "routes"),
		xdsyaml.RouteConfiguration("routes", "greeter", xdsyaml.Route{Cluster: "a"}),
		xdsyaml.EDSCluster("a"), xdsyaml.Endpoints("a", port))
	require.NoError(t, err)
	return ec.Spec
}

// An EnvoyConfig's rollout as `kubectl get -o yaml` shows it: status.rollout
// (step, revisions, gate, proxies on each side), the Progressing
// condition and the events of its steps; then a controller restart in the
// middle of it (paused at step 2): the new controller stands at the same
// step, serves the same proxies the new revision (the same bucket split,
// to grpc-go clients of the same pods on the new controller) and promote
// carries it through.
func TestEnvoyConfigRolloutStatusSurvivesARestart(t *testing.T) {
	t.Parallel()
	cluster := envtest.Start(t)
	c := ctltest.Client(t, cluster.Config)
	ctx := context.Background()
	a, b := backend.Start(t, "a"), backend.Start(t, "b")
	namespaces(t, c, "team-a")
	first := startReplicaless(t, cluster.Config)

	half := "50%"
	ec := payConfig(t, "team-a", a.Port)
	ec.Spec.Rollout = &v1alpha1.RolloutSpec{Steps: []v1alpha1.RolloutStep{{Proxies: &half}, {Pause: &v1alpha1.RolloutPause{}}}}
	require.NoError(t, c.Create(ctx, ec))
	canaryPod, otherPod := podIn(t, true, 5000), podIn(t, false, 5000)
	canary := backend.Dial(t, first.ctl.XDSAddr(), "pay-edge", canaryPod, "greeter")
	other := backend.Dial(t, first.ctl.XDSAddr(), "pay-edge", otherPod, "greeter")
	require.Eventually(t, func() bool { return canary.Call() == "a" && other.Call() == "a" }, 60*time.Second, 50*time.Millisecond)
	stable := waitPublished(t, c, ec, v1alpha1.CacheInSync)

	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest := get(t, c, ec)
		latest.Spec = greeterTo(t, b.Port)
		latest.Spec.Rollout = ec.Spec.Rollout
		return c.Update(ctx, latest)
	}))
	require.Eventually(t, func() bool { return canary.Call() == "b" }, 60*time.Second, 50*time.Millisecond, "the canary gets the update")

	// The canary ACKed: the rollout waits at step 2, its untimed pause;
	// status.rollout says so without anyone asking again (the engine's
	// move enqueued the object).
	var got *v1alpha1.EnvoyConfig
	require.Eventually(t, func() bool {
		got = get(t, c, ec)
		ro := got.Status.Rollout
		return ro != nil && ro.Phase == "Paused" && ro.Step == 2 && ro.Proxies != nil && ro.Proxies.New == 1 && ro.Proxies.Old == 1
	}, 60*time.Second, 50*time.Millisecond, "status.rollout: paused at step 2 with one proxy on each side")
	ro := got.Status.Rollout
	assert.Equal(t, int32(2), ro.Total)
	assert.Equal(t, stable, ro.StableRevision)
	require.NotNil(t, got.Status.DesiredVersion)
	assert.Equal(t, *got.Status.DesiredVersion, ro.Revision, "the revision rolled out is the desired one")
	assert.Equal(t, "promote", ro.Gate)
	assert.Contains(t, ro.Message, "step 2/2")
	require.NotNil(t, ro.StartedAt)
	require.NotNil(t, ro.StepStartedAt)
	progressing := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
	require.NotNil(t, progressing)
	assert.Equal(t, metav1.ConditionTrue, progressing.Status)
	assert.Equal(t, v1alpha1.ReasonRolloutPaused, progressing.Reason)
	require.Eventually(t, func() bool {
		evs := eventsOf(t, c, "EnvoyConfig", "team-a", "pay")
		return len(evs["RolloutStep"]) > 0 && len(evs[v1alpha1.ReasonRolloutPaused]) > 0
	}, 60*time.Second, 50*time.Millisecond, "events for the step and the pause")
	startedAt := ro.StartedAt

	// The controller stops in the middle of the rollout; a new one starts
	// on the same API server. The same pods connect to it.
	first.stop()
	second := startReplicaless(t, cluster.Config)
	canary2 := backend.Dial(t, second.ctl.XDSAddr(), "pay-edge", canaryPod, "greeter")
	other2 := backend.Dial(t, second.ctl.XDSAddr(), "pay-edge", otherPod, "greeter")
	require.Eventually(t, func() bool { return canary2.Call() == "b" && other2.Call() == "a" }, 60*time.Second, 50*time.Millisecond,
		"the same split after the restart: the canary on the new revision, the other on the stable one")
	for range 10 {
		require.Equal(t, "a", other2.Call(), "the proxy outside the step never sees the candidate")
	}
	require.Eventually(t, func() bool {
		got = get(t, c, ec)
		ro := got.Status.Rollout
		return ro != nil && ro.Phase == "Paused" && ro.Step == 2 && ro.Proxies != nil && ro.Proxies.New == 1 && ro.Proxies.Old == 1
	}, 60*time.Second, 50*time.Millisecond, "the new controller stands at the same step")
	assert.True(t, startedAt.Equal(got.Status.Rollout.StartedAt), "the same rollout, not a new one")

	annotate(t, c, get(t, c, ec), "promote")
	require.Eventually(t, func() bool { return other2.Call() == "b" }, 60*time.Second, 50*time.Millisecond, "promote carries the rollout through")
	require.Eventually(t, func() bool {
		got = get(t, c, ec)
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
		return got.Status.Rollout != nil && got.Status.Rollout.Phase == "Succeeded" && c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonRolloutSucceeded
	}, 60*time.Second, 50*time.Millisecond, "Progressing False, RolloutSucceeded")
	assert.Equal(t, int32(2), got.Status.Rollout.Proxies.New)
	require.Eventually(t, func() bool {
		return len(eventsOf(t, c, "EnvoyConfig", "team-a", "pay")[v1alpha1.ReasonRolloutSucceeded]) == 1
	}, 60*time.Second, 50*time.Millisecond, "one event for the promotion")
}

// The legate.dev/rollout annotation steers only its own namespace's
// rollouts: team-b's EnvoyConfig naming team-a's node, annotated promote,
// moves nothing of team-a's paused rollout, and team-b is refused with
// the very words an EnvoyConfig whose node nobody serves gets, so that
// the refusal does not tell team-b that team-a serves the node.
func TestRolloutAnnotationCannotSteerAnotherNamespace(t *testing.T) {
	t.Parallel()
	cluster := envtest.Start(t)
	c := ctltest.Client(t, cluster.Config)
	ctl := start(t, cluster.Config)
	ctx := context.Background()
	a, b := backend.Start(t, "a"), backend.Start(t, "b")
	namespaces(t, c, "team-a", "team-b")

	half := "50%"
	ec := payConfig(t, "team-a", a.Port)
	ec.Spec.Rollout = &v1alpha1.RolloutSpec{Steps: []v1alpha1.RolloutStep{{Proxies: &half}, {Pause: &v1alpha1.RolloutPause{}}}}
	require.NoError(t, c.Create(ctx, ec))
	canary := backend.Dial(t, ctl.XDSAddr(), "pay-edge", podIn(t, true, 5000), "greeter")
	other := backend.Dial(t, ctl.XDSAddr(), "pay-edge", podIn(t, false, 5000), "greeter")
	require.Eventually(t, func() bool { return canary.Call() == "a" && other.Call() == "a" }, 60*time.Second, 50*time.Millisecond)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest := get(t, c, ec)
		latest.Spec = greeterTo(t, b.Port)
		latest.Spec.Rollout = ec.Spec.Rollout
		return c.Update(ctx, latest)
	}))
	require.Eventually(t, func() bool {
		ro := get(t, c, ec).Status.Rollout
		return ro != nil && ro.Phase == "Paused" && ro.Step == 2
	}, 60*time.Second, 50*time.Millisecond, "team-a's rollout waits at its pause")

	// team-b claims team-a's node, and another node whose configuration
	// is rejected, so that nobody serves it.
	intruder := payConfig(t, "team-b", b.Port)
	require.NoError(t, c.Create(ctx, intruder))
	ghost := payConfig(t, "team-b", b.Port)
	ghost.Name, ghost.Spec.NodeID = "ghost", "ghost-edge"
	ghost.Spec.Resources[0].Value.Raw = []byte(strings.Replace(string(ghost.Spec.Resources[0].Value.Raw), "{", `{"bogus_field": 1, `, 1))
	require.NoError(t, c.Create(ctx, ghost))
	require.Eventually(t, func() bool {
		g := get(t, c, ghost)
		r := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady)
		return r != nil && r.Status == metav1.ConditionFalse && g.Status.ObservedGeneration == g.Generation
	}, 60*time.Second, 50*time.Millisecond, "the ghost's configuration is rejected")
	refusedAsForeign(t, c, intruder, "team-a")

	annotate(t, c, intruder, "promote")
	annotate(t, c, ghost, "promote")
	var notes map[string][]string
	var ghostNotes []string
	require.Eventually(t, func() bool {
		notes = eventsOf(t, c, "EnvoyConfig", "team-b", "pay")
		ghostNotes = eventsOf(t, c, "EnvoyConfig", "team-b", "ghost")["RolloutCommandRefused"]
		return len(notes["RolloutCommandRefused"]) > 0 && len(ghostNotes) > 0
	}, 60*time.Second, 50*time.Millisecond, "both annotations are refused")
	assert.Empty(t, notes["RolloutCommand"], "nothing was carried out for team-b")
	refusal := notes["RolloutCommandRefused"][0]
	assert.Equal(t, strings.ReplaceAll(ghostNotes[0], "ghost-edge", "pay-edge"), refusal,
		"the refusal reads the same as for a node nobody serves")
	assert.NotContains(t, refusal, "team-a")
	assert.NotContains(t, refusal, "rollout is", "nothing of team-a's rollout")
	require.Eventually(t, func() bool {
		_, still := get(t, c, intruder).Annotations[v1alpha1.RolloutAnnotation]
		return !still
	}, 60*time.Second, 50*time.Millisecond, "the refused annotation is removed")

	ro := get(t, c, ec).Status.Rollout
	require.NotNil(t, ro)
	assert.Equal(t, "Paused", ro.Phase, "team-a's rollout did not move")
	assert.Equal(t, int32(2), ro.Step)
	for range 10 {
		require.Equal(t, "a", other.Call(), "team-a's other proxy is still on the stable revision")
	}
	assert.Nil(t, get(t, c, intruder).Status.Rollout, "nothing of team-a's rollout in team-b's status")
}

// An EnvoySource's rollout (a Flux artifact, a new commit): status.rollout
// on the EnvoySource names the commit and counts its node's proxies,
// `kubectl annotate envoysource … legate.dev/rollout=promote` carries it
// through and is removed, and the same annotation once nothing rolls out
// is refused with a Warning event.
func TestEnvoySourceRolloutStatusAndAnnotation(t *testing.T) {
	t.Parallel()
	cluster := envtest.Start(t, envtest.FluxCRDs(t))
	c := ctltest.Client(t, cluster.Config)
	ctl := start(t, cluster.Config)
	ctx := context.Background()
	a, b := backend.Start(t, "a"), backend.Start(t, "b")
	arts := newArtifactServer(t)

	repo := createGitRepository(t, c, "default", "envoy", "https://git.example/team/envoy-config")
	sha1 := strings.Repeat("1", 40)
	url, digest := arts.put(t, "/gitrepository/default/envoy/"+sha1+".tar.gz", greeterFiles("a", a.Port, b.Port))
	setArtifact(t, c, repo, url, digest, "main@sha1:"+sha1)

	half := "50%"
	es := &v1alpha1.EnvoySource{
		ObjectMeta: metav1.ObjectMeta{Name: "from-flux", Namespace: "default"},
		Spec: v1alpha1.EnvoySourceSpec{
			SourceRef: &v1alpha1.FluxSourceRef{Kind: "GitRepository", Name: "envoy"},
			Path:      "./envoy",
			Interval:  metav1.Duration{Duration: time.Hour},
			Rollout:   &v1alpha1.RolloutSpec{Steps: []v1alpha1.RolloutStep{{Proxies: &half}, {Pause: &v1alpha1.RolloutPause{}}}},
		},
	}
	require.NoError(t, c.Create(ctx, es))
	key := client.ObjectKeyFromObject(es)
	canary := backend.Dial(t, ctl.XDSAddr(), "grpc-client", podIn(t, true, 5000), "greeter")
	other := backend.Dial(t, ctl.XDSAddr(), "grpc-client", podIn(t, false, 5000), "greeter")
	require.Eventually(t, func() bool { return canary.Call() == "a" && other.Call() == "a" }, 60*time.Second, 50*time.Millisecond)

	sha2 := strings.Repeat("2", 40)
	url, digest = arts.put(t, "/gitrepository/default/envoy/"+sha2+".tar.gz", greeterFiles("b", a.Port, b.Port))
	setArtifact(t, c, repo, url, digest, "main@sha1:"+sha2)
	require.Eventually(t, func() bool { return canary.Call() == "b" }, 60*time.Second, 50*time.Millisecond, "the canary gets the new commit")
	var got *v1alpha1.EnvoySource
	require.Eventually(t, func() bool {
		got = getSource(t, c, key)
		ro := got.Status.Rollout
		return ro != nil && ro.Phase == "Paused" && ro.Step == 2 && ro.Proxies != nil && ro.Proxies.New == 1 && ro.Proxies.Old == 1
	}, 60*time.Second, 50*time.Millisecond, "the EnvoySource says its rollout waits at step 2")
	assert.Equal(t, sha2, got.Status.Rollout.Commit)
	assert.Equal(t, "promote", got.Status.Rollout.Gate)
	progressing := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
	require.NotNil(t, progressing)
	assert.Equal(t, metav1.ConditionTrue, progressing.Status)
	assert.Equal(t, v1alpha1.ReasonRolloutPaused, progressing.Reason)
	for range 10 {
		require.Equal(t, "a", other.Call())
	}

	annotate(t, c, got, "promote")
	require.Eventually(t, func() bool { return other.Call() == "b" }, 60*time.Second, 50*time.Millisecond, "promote on the EnvoySource carries its node's rollout through")
	require.Eventually(t, func() bool {
		got = getSource(t, c, key)
		_, still := got.Annotations[v1alpha1.RolloutAnnotation]
		return !still && got.Status.Rollout != nil && got.Status.Rollout.Phase == "Succeeded" &&
			meta.IsStatusConditionFalse(got.Status.Conditions, v1alpha1.ConditionProgressing)
	}, 60*time.Second, 50*time.Millisecond, "the annotation is removed and the rollout succeeded")
	require.Eventually(t, func() bool {
		evs := eventsOf(t, c, "EnvoySource", "default", "from-flux")
		return len(evs["RolloutCommand"]) == 1 && len(evs[v1alpha1.ReasonRolloutSucceeded]) == 1
	}, 60*time.Second, 50*time.Millisecond, "the command and the promotion are told")

	annotate(t, c, got, "abort")
	require.Eventually(t, func() bool {
		refused := eventsOf(t, c, "EnvoySource", "default", "from-flux")["RolloutCommandRefused"]
		return len(refused) == 1 && strings.HasPrefix(refused[0], "Warning: ")
	}, 60*time.Second, 50*time.Millisecond, "nothing rolls out: the abort is refused")
	assert.Equal(t, "b", other.Call(), "and changes nothing")
}

// podsIn returns n pod names whose proxies fall inside (or outside) a
// share of basis points.
func podsIn(t *testing.T, inside bool, share, n int) []string {
	t.Helper()
	var out []string
	for i := 0; len(out) < n && i < 10000; i++ {
		pod := fmt.Sprintf("pod-%d", i)
		if rollout.InShare(rollout.ProxyBucket("", pod, "", ""), share) == inside {
			out = append(out, pod)
		}
	}
	require.Len(t, out, n)
	return out
}

// Three replicas, a rollout paused at step 2: every replica serves the
// leader's split (the canary of each on the candidate, the other proxy on
// the stable revision); the leader is killed, another leads, the split
// stays where it was on the replicas left and status.rollout names the
// same rollout at the same step; promote on the new leader carries it
// through on every replica.
func TestRolloutContinuesAcrossALeaderKill(t *testing.T) {
	t.Parallel()
	cluster := envtest.Start(t)
	c := ctltest.Client(t, cluster.Config)
	ctx := context.Background()
	a, b := backend.Start(t, "a"), backend.Start(t, "b")
	namespaces(t, c, "team-a")
	rs := []*haReplica{startReplica(t, cluster.Config, "r0"), startReplica(t, cluster.Config, "r1"), startReplica(t, cluster.Config, "r2")}
	lead := leader(t, rs)

	half := "50%"
	ec := payConfig(t, "team-a", a.Port)
	ec.Spec.Rollout = &v1alpha1.RolloutSpec{Steps: []v1alpha1.RolloutStep{{Proxies: &half}, {Pause: &v1alpha1.RolloutPause{}}}}
	require.NoError(t, c.Create(ctx, ec))
	canaryPods, otherPods := podsIn(t, true, 5000, len(rs)), podsIn(t, false, 5000, len(rs))
	canaries, others := make([]*backend.Client, len(rs)), make([]*backend.Client, len(rs))
	for i, r := range rs {
		canaries[i] = backend.Dial(t, r.ctl.XDSAddr(), "pay-edge", canaryPods[i], "greeter")
		others[i] = backend.Dial(t, r.ctl.XDSAddr(), "pay-edge", otherPods[i], "greeter")
	}
	for i := range rs {
		require.Eventually(t, func() bool { return canaries[i].Call() == "a" && others[i].Call() == "a" }, 60*time.Second, 50*time.Millisecond)
	}
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest := get(t, c, ec)
		latest.Spec = greeterTo(t, b.Port)
		latest.Spec.Rollout = ec.Spec.Rollout
		return c.Update(ctx, latest)
	}))
	split := func(rs []*haReplica, msg string) {
		t.Helper()
		for i, r := range rs {
			require.Eventually(t, func() bool { return canaries[i].Call() == "b" && others[i].Call() == "a" }, 60*time.Second, 50*time.Millisecond,
				"%s: replica %s serves the split", msg, r.name)
		}
	}
	split(rs, "before the kill")
	var started *metav1.Time
	require.Eventually(t, func() bool {
		ro := get(t, c, ec).Status.Rollout
		if ro == nil || ro.Phase != "Paused" || ro.Step != 2 {
			return false
		}
		started = ro.StartedAt
		return true
	}, 60*time.Second, 50*time.Millisecond, "paused at step 2")

	lead.stop()
	var left []*haReplica
	var leftCanaries, leftOthers []*backend.Client
	for i, r := range rs {
		if r != lead {
			left = append(left, r)
			leftCanaries, leftOthers = append(leftCanaries, canaries[i]), append(leftOthers, others[i])
		}
	}
	canaries, others = leftCanaries, leftOthers
	next := leader(t, left)
	require.NotEqual(t, lead.name, next.name)
	split(left, "after the kill")
	for range 10 {
		for i := range left {
			require.Equal(t, "a", others[i].Call(), "no proxy outside the step gets the candidate during the failover")
		}
	}
	annotate(t, c, get(t, c, ec), "promote")
	for i, r := range left {
		require.Eventually(t, func() bool { return others[i].Call() == "b" }, 60*time.Second, 50*time.Millisecond, "promote reaches replica %s", r.name)
	}
	got := get(t, c, ec)
	require.NotNil(t, got.Status.Rollout)
	assert.True(t, started.Equal(got.Status.Rollout.StartedAt), "the new leader continued the same rollout")
}
