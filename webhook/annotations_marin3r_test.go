package webhook

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/legate-dev/legate/render"
)

// marin3rKeys are the annotations MARIN3R's injector reads
// (3scale-ops/marin3r pkg/webhooks/podv1mutator/sidecar.go, the param*
// constants), each with a value MARIN3R accepts.
var marin3rKeys = map[string]string{
	"node-id":                                "kuard",
	"cluster-id":                             "kuard",
	"container-name":                         "envoy-sidecar",
	"ports":                                  "envoy-https:8443",
	"host-port-mappings":                     "envoy-https:18443",
	"envoy-image":                            "envoyproxy/envoy:v1.36.2",
	"config-volume":                          "envoy-sidecar-bootstrap",
	"tls-volume":                             "envoy-sidecar-tls",
	"client-certificate":                     "envoy-sidecar-client-cert",
	"envoy-extra-args":                       "--log-level debug",
	"envoy-api-version":                      "v3",
	"discovery-service.name":                 "instance",
	"admin.port":                             "9901",
	"admin.bind-address":                     "127.0.0.1",
	"admin.access-log-path":                  "/dev/stdout",
	"resources.requests.cpu":                 "50m",
	"resources.requests.memory":              "32Mi",
	"resources.limits.cpu":                   "500m",
	"resources.limits.memory":                "128Mi",
	"shutdown-manager.enabled":               "true",
	"shutdown-manager.port":                  "8090",
	"shutdown-manager.image":                 "quay.io/3scale/marin3r:v0.13.0",
	"shutdown-manager.extra-lifecycle-hooks": "kuard",
	"shutdown-manager.drain-time":            "60",
	"shutdown-manager.drain-strategy":        "immediate",
	"init-manager.image":                     "quay.io/3scale/marin3r:v0.13.0",
}

// Every annotation MARIN3R reads is accepted under its prefix, each one
// alone and all together, and under legate's prefix as well.
func TestParseAcceptsEveryMARIN3RAnnotation(t *testing.T) {
	require.Len(t, marin3rKeys, 26)
	all := map[string]string{}
	for key, v := range marin3rKeys {
		all[marin3rPrefix+key] = v
		one := map[string]string{marin3rPrefix + "node-id": "kuard", marin3rPrefix + key: v}
		if key == "host-port-mappings" {
			one[marin3rPrefix+"ports"] = marin3rKeys["ports"]
		}
		_, err := Parse(one)
		assert.NoError(t, err, key)
		_, err = Parse(map[string]string{legatePrefix + "node-id": "kuard", legatePrefix + key: v, legatePrefix + "ports": marin3rKeys["ports"]})
		assert.NoError(t, err, "legate.dev/%s", key)
	}
	s, err := Parse(all)
	require.NoError(t, err)
	assert.False(t, s.NoDrainHook)
	assert.Equal(t, []string{"kuard"}, s.WaitForDrain)
	assert.Equal(t, DrainImmediate, s.DrainStrategy)

	off, err := Parse(map[string]string{marin3rPrefix + "node-id": "kuard", marin3rPrefix + "shutdown-manager.enabled": "false"})
	require.NoError(t, err)
	assert.True(t, off.NoDrainHook, `shutdown-manager.enabled "false" is MARIN3R without its drain`)
}

// MARIN3R's settings are still checked, naming the annotation; an unknown
// key is refused by name under either prefix, with a guess when one is
// close.
func TestParseRefusesBadMARIN3RAnnotations(t *testing.T) {
	for _, tc := range []struct {
		key, value, want string
	}{
		{"marin3r.3scale.net/shutdown-manager.enabled", "yes please", `annotation marin3r.3scale.net/shutdown-manager.enabled: "yes please": want true or false`},
		{"marin3r.3scale.net/shutdown-manager.port", "80", `annotation marin3r.3scale.net/shutdown-manager.port: "80": want a port number from 1024 to 65535`},
		{"marin3r.3scale.net/shutdown-manager.port", "http", `annotation marin3r.3scale.net/shutdown-manager.port: "http"`},
		{"marin3r.3scale.net/shutdown-manager.image", " ", `annotation marin3r.3scale.net/shutdown-manager.image: " ": want an image reference`},
		{"marin3r.3scale.net/init-manager.image", "a b", `annotation marin3r.3scale.net/init-manager.image: "a b"`},
		{"marin3r.3scale.net/discovery-service.name", "Not_A_Name", `annotation marin3r.3scale.net/discovery-service.name: "Not_A_Name"`},
		{"marin3r.3scale.net/shutdown-manager.extra-lifecycle-hooks", "kuard,Bad_Name", `annotation marin3r.3scale.net/shutdown-manager.extra-lifecycle-hooks: container name "Bad_Name"`},
		{"marin3r.3scale.net/shutdown-manager.extra-lifecycle-hooks", "kuard,kuard", `container "kuard" is named twice`},
		{"marin3r.3scale.net/shutdown-manager.drain-time", "30s", `annotation marin3r.3scale.net/shutdown-manager.drain-time: "30s": want whole seconds`},
		{"legate.dev/shutdown-manager.enable", "true", "unknown annotation legate.dev/shutdown-manager.enable: did you mean legate.dev/shutdown-manager.enabled?"},
		{"legate.dev/nodeid", "a", "unknown annotation legate.dev/nodeid: did you mean legate.dev/node-id?"},
		{"marin3r.3scale.net/envoy-imag", "x", "unknown annotation marin3r.3scale.net/envoy-imag: did you mean marin3r.3scale.net/envoy-image?"},
		{"legate.dev/colour", "red", "unknown annotation legate.dev/colour: want one of"},
		// Keys MARIN3R does not read either are refused under its prefix.
		{"marin3r.3scale.net/shutdown-manager.timeout", "5", "unknown annotation marin3r.3scale.net/shutdown-manager.timeout"},
		{"marin3r.3scale.net/ads-configmap", "x", "annotation marin3r.3scale.net/ads-configmap: legate generates each sidecar's bootstrap"},
	} {
		_, err := Parse(map[string]string{"marin3r.3scale.net/node-id": "a", tc.key: tc.value})
		if assert.Error(t, err, tc.key) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 3}, {"node-id", "nodeid", 1}, {"ports", "port", 1}, {"kitten", "sitting", 3}} {
		assert.Equal(t, tc.want, render.EditDistance(tc.a, tc.b), "%q %q", tc.a, tc.b)
		assert.Equal(t, tc.want, render.EditDistance(tc.b, tc.a), "%q %q", tc.b, tc.a)
	}
	assert.Empty(t, closest("ports-extra-long-unrelated"), "no guess when nothing is close")
}

// kuardPod is MARIN3R's examples/k8s/sidecars/kuard.yaml pod template
// with every annotation of MARIN3R's, as it is.
func kuardPod(mode string) *corev1.Pod {
	pod := shopPod(nil)
	pod.Labels = map[string]string{MARIN3RLabel: Enabled}
	pod.Annotations = map[string]string{}
	for k, v := range marin3rKeys {
		pod.Annotations[marin3rPrefix+k] = v
	}
	if mode != "" {
		pod.Annotations[legatePrefix+"sidecar-mode"] = mode
	}
	pod.Spec.Containers = []corev1.Container{{Name: "kuard", Image: "gcr.io/kuar-demo/kuard-amd64:blue"}}
	return pod
}

// The containers extra-lifecycle-hooks names outlive Envoy's drain: a
// preStop sleep of the drain time, and a grace period covering it; the
// native sidecar's drain comes after it, so its grace counts both.
func TestInjectWaitsForTheDrain(t *testing.T) {
	for mode, grace := range map[string]int64{ModeClassic: 60 + drainMargin, ModeNative: 60 + 60 + drainMargin} {
		t.Run(mode, func(t *testing.T) {
			pod := kuardPod(mode)
			_, injected, err := testInjector().Inject(pod)
			require.NoError(t, err)
			require.True(t, injected)
			app := pod.Spec.Containers[0]
			require.Equal(t, "kuard", app.Name)
			require.NotNil(t, app.Lifecycle)
			assert.Equal(t, &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 60}}, app.Lifecycle.PreStop)
			require.NotNil(t, pod.Spec.TerminationGracePeriodSeconds)
			assert.Equal(t, grace, *pod.Spec.TerminationGracePeriodSeconds)

			once := podJSON(t, pod)
			_, _, err = testInjector().Inject(pod)
			require.NoError(t, err)
			assert.Equal(t, once, podJSON(t, pod), "injecting again changes nothing")
		})
	}
}

func TestInjectDrainWaitRefusals(t *testing.T) {
	pod := kuardPod("")
	pod.Annotations[marin3rPrefix+"shutdown-manager.extra-lifecycle-hooks"] = "kuard,sidecar-of-mine"
	_, _, err := testInjector().Inject(pod)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `annotation marin3r.3scale.net/shutdown-manager.extra-lifecycle-hooks: container "sidecar-of-mine" is not in spec.containers`)

	pod = kuardPod("")
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/stop"}}}}
	before := podJSON(t, pod)
	_, _, err = testInjector().Inject(pod)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.containers[kuard] has a preStop hook of its own")
	assert.Equal(t, before, podJSON(t, pod), "a refused pod is left as it was")
}

// shutdown-manager.enabled "false" is MARIN3R's sidecar without a shutdown
// manager: no drain hook, no wait, no longer grace period.
func TestInjectWithoutShutdownManager(t *testing.T) {
	pod := kuardPod(ModeClassic)
	pod.Annotations[marin3rPrefix+"shutdown-manager.enabled"] = "false"
	_, _, err := testInjector().Inject(pod)
	require.NoError(t, err)
	sidecar := pod.Spec.Containers[len(pod.Spec.Containers)-1]
	require.Equal(t, DefaultContainerName, sidecar.Name)
	assert.Nil(t, sidecar.Lifecycle, "no drain hook")
	assert.Nil(t, pod.Spec.Containers[0].Lifecycle, "nothing to wait for")
	assert.Nil(t, pod.Spec.TerminationGracePeriodSeconds, "the pod's own grace period")
}

// BenchmarkInjectMARIN3RPod injects the pod with every MARIN3R annotation:
// go test ./webhook -run x -bench InjectMARIN3RPod.
func BenchmarkInjectMARIN3RPod(b *testing.B) {
	in := testInjector()
	src := kuardPod("")
	for b.Loop() {
		pod := src.DeepCopy()
		if _, _, err := in.Inject(pod); err != nil {
			b.Fatal(err)
		}
	}
}
