package controller_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/webhook"
)

var testInjector = webhook.Injector{XDSAddress: "legate-xds.legate-system.svc:18000"}

// podOf is the Pod a ReplicaSet makes of a Deployment's template: a
// generateName, no name (so the sidecar cannot know its pod's name at
// admission).
func podOf(t *testing.T, file string) *corev1.Pod {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "webhook", "testdata", "inject", file))
	require.NoError(t, err)
	var d appsv1.Deployment
	for _, doc := range strings.Split(string(data), "\n---") {
		d = appsv1.Deployment{}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &d))
		if d.Kind == "Deployment" {
			break
		}
	}
	require.Equal(t, "Deployment", d.Kind, file)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: d.Name + "-5d4f8-", Namespace: "default",
			Labels: d.Spec.Template.Labels, Annotations: d.Spec.Template.Annotations,
		},
		Spec: d.Spec.Template.Spec,
	}
}

// sidecarOf returns the container named name among pod's init containers
// and containers.
func sidecarOf(pod *corev1.Pod, name string) (corev1.Container, bool) {
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		if c.Name == name {
			return c, true
		}
	}
	return corev1.Container{}, false
}

// A Pod made from a Deployment's template gets, through the API server's
// admission chain, the same sidecar `legate inject` prints offline: a
// native sidecar (an init container that always restarts, first of all)
// with its probes, drain hook, bootstrap and the client certificate's
// Secret mounted.
func TestDeploymentPodIsInjected(t *testing.T) {
	t.Parallel()
	c, _, _ := admitted(t, nil)
	ctx := context.Background()
	pod := podOf(t, "deployment.yaml")
	offline := pod.DeepCopy()
	s, injected, err := testInjector.Inject(offline)
	require.NoError(t, err)
	require.True(t, injected, "the template asks for a sidecar")

	require.NoError(t, c.Create(ctx, pod))
	var stored corev1.Pod
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(pod), &stored))
	require.NotEmpty(t, stored.Spec.InitContainers)
	got := stored.Spec.InitContainers[0]
	assert.Equal(t, s.ContainerName, got.Name, "the sidecar starts before every other container")
	require.NotNil(t, got.RestartPolicy)
	assert.Equal(t, corev1.ContainerRestartPolicyAlways, *got.RestartPolicy, "a native sidecar")
	want, ok := sidecarOf(offline, s.ContainerName)
	require.True(t, ok)
	assert.Equal(t, want.Image, got.Image)
	assert.Equal(t, want.Args, got.Args, "the webhook and legate inject generate the same bootstrap")
	assert.Equal(t, want.Env, got.Env)
	assert.Equal(t, want.Ports, got.Ports)
	assert.Equal(t, want.VolumeMounts, got.VolumeMounts)
	assert.Equal(t, want.Lifecycle, got.Lifecycle)
	require.NotNil(t, got.StartupProbe, "the app starts once Envoy is ready")
	require.NotNil(t, got.ReadinessProbe)
	assert.Contains(t, strings.Join(got.Args, " "), "$(POD_NAME)", "the pod's name reaches the bootstrap through the kubelet")
	assert.Equal(t, offline.Annotations[webhook.InjectedAnnotation], stored.Annotations[webhook.InjectedAnnotation])

	var secretVolume *corev1.SecretVolumeSource
	for _, v := range stored.Spec.Volumes {
		if v.Name == s.TLSVolume {
			secretVolume = v.Secret
		}
	}
	require.NotNil(t, secretVolume, "the client certificate's Secret is mounted")
	assert.Equal(t, pki.ProxySecretName(s.NodeID), secretVolume.SecretName, "one Secret per node ID")
	// The app's own containers are kept as they were.
	assert.Len(t, stored.Spec.Containers, len(pod.Spec.Containers))
}

// Pods migrating from MARIN3R keep their label and annotations, every
// one MARIN3R's injector reads: the real API server stores the pod, with
// MARIN3R's container name, ports and node ID, and the container
// shutdown-manager.extra-lifecycle-hooks names waiting for the drain.
func TestMARIN3RPodIsInjected(t *testing.T) {
	t.Parallel()
	c, _, _ := admitted(t, nil)
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "kuard-", Namespace: "default",
			Labels: map[string]string{"marin3r.3scale.net/status": "enabled", "app": "kuard"},
			Annotations: map[string]string{
				"marin3r.3scale.net/node-id":                                "kuard",
				"marin3r.3scale.net/cluster-id":                             "kuard",
				"marin3r.3scale.net/container-name":                         "envoy-sidecar",
				"marin3r.3scale.net/ports":                                  "envoy-https:8443",
				"marin3r.3scale.net/host-port-mappings":                     "envoy-https:18443",
				"marin3r.3scale.net/envoy-image":                            "envoyproxy/envoy:v1.36.2",
				"marin3r.3scale.net/config-volume":                          "envoy-sidecar-bootstrap",
				"marin3r.3scale.net/tls-volume":                             "envoy-sidecar-tls",
				"marin3r.3scale.net/envoy-extra-args":                       "--component-log-level config:debug",
				"marin3r.3scale.net/envoy-api-version":                      "v3",
				"marin3r.3scale.net/discovery-service.name":                 "instance",
				"marin3r.3scale.net/admin.port":                             "9901",
				"marin3r.3scale.net/admin.bind-address":                     "127.0.0.1",
				"marin3r.3scale.net/admin.access-log-path":                  "/dev/null",
				"marin3r.3scale.net/resources.requests.cpu":                 "50m",
				"marin3r.3scale.net/resources.requests.memory":              "32Mi",
				"marin3r.3scale.net/resources.limits.cpu":                   "500m",
				"marin3r.3scale.net/resources.limits.memory":                "128Mi",
				"marin3r.3scale.net/shutdown-manager.enabled":               "true",
				"marin3r.3scale.net/shutdown-manager.port":                  "8090",
				"marin3r.3scale.net/shutdown-manager.image":                 "quay.io/3scale/marin3r:test",
				"marin3r.3scale.net/shutdown-manager.extra-lifecycle-hooks": "kuard",
				"marin3r.3scale.net/shutdown-manager.drain-time":            "30",
				"marin3r.3scale.net/shutdown-manager.drain-strategy":        "gradual",
				"marin3r.3scale.net/init-manager.image":                     "quay.io/3scale/marin3r:test",
			},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kuard", Image: "gcr.io/kuar-demo/kuard-amd64:blue"}}},
	}
	require.NoError(t, c.Create(ctx, pod))
	var stored corev1.Pod
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(pod), &stored))
	sidecar, ok := sidecarOf(&stored, webhook.DefaultContainerName)
	require.True(t, ok, "MARIN3R's container name envoy-sidecar")
	require.Len(t, sidecar.Ports, 1)
	assert.Equal(t, "envoy-https", sidecar.Ports[0].Name)
	assert.Equal(t, int32(8443), sidecar.Ports[0].ContainerPort)
	assert.Equal(t, "500m", sidecar.Resources.Limits.Cpu().String())
	assert.Contains(t, strings.Join(sidecar.Args, " "), `"id":"kuard"`, "node.id from marin3r.3scale.net/node-id")
	require.NotNil(t, sidecar.Lifecycle, "the drain hook: shutdown-manager.enabled")
	app, _ := sidecarOf(&stored, "kuard")
	require.NotNil(t, app.Lifecycle)
	require.NotNil(t, app.Lifecycle.PreStop.Sleep, "kuard waits for the drain")
	assert.Equal(t, int64(30), app.Lifecycle.PreStop.Sleep.Seconds)
	require.NotNil(t, stored.Spec.TerminationGracePeriodSeconds)
	assert.GreaterOrEqual(t, *stored.Spec.TerminationGracePeriodSeconds, int64(60))
}

// A Pod with a malformed annotation is refused at creation with a message
// naming the annotation; a dry run gives the same verdict.
func TestMalformedSidecarAnnotationsAreRefused(t *testing.T) {
	t.Parallel()
	c, _, _ := admitted(t, nil)
	ctx := context.Background()
	for annotation, value := range map[string]string{
		"legate.dev/ports":                        "http:80",
		"legate.dev/shutdown-manager.drain-time":  "soon",
		"marin3r.3scale.net/envoy-api-version":    "v2",
		"legate.dev/no-such-setting":              "x",
		"marin3r.3scale.net/resources.limits.cpu": "lots",
	} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				GenerateName: "web-", Namespace: "default",
				Labels:      map[string]string{webhook.InjectLabel: webhook.Enabled},
				Annotations: map[string]string{"legate.dev/node-id": "web", annotation: value},
			},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
		}
		msg := refusal(t, c.Create(ctx, pod.DeepCopy()))
		assert.Contains(t, msg, annotation, "the refusal names the annotation")
		assert.Equal(t, msg, refusal(t, c.Create(ctx, pod.DeepCopy(), client.DryRunAll)), "dry run: same verdict")
	}
	var pods corev1.PodList
	require.NoError(t, c.List(ctx, &pods, client.InNamespace("default")))
	assert.Empty(t, pods.Items, "no refused Pod is stored")
}
