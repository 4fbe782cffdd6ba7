package webhook

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata and delete orphans")

// testInjector is the injector of the golden files.
func testInjector() Injector {
	return Injector{Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
	}}
}

// TestInjectGolden injects testdata/inject/*.yaml as legate inject -f
// does and compares with the .golden.yaml beside each; the bootstrap of
// the Deployment's sidecar is testdata/bootstrap.golden.yaml, readable.
// go test ./webhook -run Golden -update rewrites them.
func TestInjectGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/inject/*.yaml")
	require.NoError(t, err)
	produced := map[string]bool{}
	check := func(golden string, got []byte) {
		t.Helper()
		produced[golden] = true
		if *update {
			require.NoError(t, os.WriteFile(golden, got, 0o600))
			return
		}
		want, err := os.ReadFile(golden)
		require.NoError(t, err, "run go test ./webhook -run Golden -update")
		assert.Equal(t, string(want), string(got), golden)
	}
	for _, in := range inputs {
		if strings.HasSuffix(in, ".golden.yaml") {
			continue
		}
		f, err := os.Open(in)
		require.NoError(t, err)
		var out bytes.Buffer
		require.NoError(t, testInjector().InjectManifests(f, &out), in)
		require.NoError(t, f.Close())
		check(strings.TrimSuffix(in, ".yaml")+".golden.yaml", out.Bytes())
	}
	require.Len(t, produced, 2, "the Deployment and the MARIN3R pod")

	s, err := Parse(map[string]string{"legate.dev/node-id": "shop-edge", "legate.dev/ports": "http:8080,https:8443"})
	require.NoError(t, err)
	config, err := testInjector().withDefaults().bootstrap(s)
	require.NoError(t, err)
	pretty, err := yaml.JSONToYAML([]byte(config))
	require.NoError(t, err)
	check("testdata/bootstrap.golden.yaml", append([]byte("# The sidecar's bootstrap of testdata/inject/deployment.yaml, as YAML.\n"), pretty...))

	if *update {
		goldens, err := filepath.Glob("testdata/*.golden.yaml")
		require.NoError(t, err)
		more, err := filepath.Glob("testdata/inject/*.golden.yaml")
		require.NoError(t, err)
		for _, g := range append(goldens, more...) {
			if !produced[g] {
				require.NoError(t, os.Remove(g))
			}
		}
	}
}

// shopPod is a pod asking for a sidecar with ann added to its annotations.
func shopPod(ann map[string]string) *corev1.Pod {
	annotations := map[string]string{"legate.dev/node-id": "shop-edge", "legate.dev/ports": "http:8080"}
	for k, v := range ann {
		annotations[k] = v
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "shop-", Namespace: "shop",
			Labels: map[string]string{InjectLabel: Enabled}, Annotations: annotations,
		},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "migrate", Image: "shop:1"}},
			Containers:     []corev1.Container{{Name: "shop", Image: "shop:1", Ports: []corev1.ContainerPort{{ContainerPort: 3000}}}},
			Volumes:        []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
}

func podJSON(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	data, err := json.Marshal(pod)
	require.NoError(t, err)
	return string(data)
}

// The API server calls the webhook again with the pod it injected
// (reinvocationPolicy IfNeeded): nothing changes the second time, in
// either mode, whatever the annotations.
func TestInjectIsIdempotent(t *testing.T) {
	for name, ann := range map[string]map[string]string{
		"native":       nil,
		"classic":      {"legate.dev/sidecar-mode": "classic"},
		"renamed":      {"legate.dev/container-name": "proxy", "legate.dev/tls-volume": "proxy-tls", "legate.dev/client-certificate": "shop-cert"},
		"no drain":     {"legate.dev/shutdown-manager.drain-time": "0"},
		"every option": {"legate.dev/admin.bind-address": "::1", "legate.dev/envoy-extra-args": "--log-level debug", "legate.dev/resources.limits.cpu": "1"},
	} {
		t.Run(name, func(t *testing.T) {
			pod := shopPod(ann)
			_, injected, err := testInjector().Inject(pod)
			require.NoError(t, err)
			require.True(t, injected)
			once := podJSON(t, pod)
			_, injected, err = testInjector().Inject(pod)
			require.NoError(t, err)
			assert.True(t, injected)
			assert.JSONEq(t, once, podJSON(t, pod))
			assert.Equal(t, once, podJSON(t, pod), "byte-equal, so the webhook's patch is empty")
			assert.Len(t, append(pod.Spec.InitContainers, pod.Spec.Containers...), 3, "one sidecar")
			assert.Len(t, pod.Spec.Volumes, 2, "one certificate volume")
		})
	}
}

// The native sidecar starts first among the init containers and restarts
// always; the classic one is the last container, as MARIN3R adds it.
func TestInjectNativeAndClassic(t *testing.T) {
	pod := shopPod(nil)
	s, injected, err := Injector{}.Inject(pod)
	require.NoError(t, err)
	require.True(t, injected)
	assert.Equal(t, ModeNative, s.Mode)
	require.Len(t, pod.Spec.InitContainers, 2)
	sidecar := pod.Spec.InitContainers[0]
	assert.Equal(t, DefaultContainerName, sidecar.Name)
	assert.Equal(t, corev1.ContainerRestartPolicyAlways, *sidecar.RestartPolicy)
	assert.Equal(t, "migrate", pod.Spec.InitContainers[1].Name)
	assert.Len(t, pod.Spec.Containers, 1)
	assert.Equal(t, DefaultImage, sidecar.Image)
	require.NotNil(t, sidecar.StartupProbe, "the kubelet starts the next container once Envoy is ready")
	assert.Equal(t, "/ready", sidecar.StartupProbe.HTTPGet.Path)
	assert.Equal(t, int32(DefaultReadinessPort), sidecar.ReadinessProbe.HTTPGet.Port.IntVal)

	pod = shopPod(map[string]string{"legate.dev/sidecar-mode": "classic"})
	s, _, err = Injector{}.Inject(pod)
	require.NoError(t, err)
	assert.Equal(t, ModeClassic, s.Mode)
	require.Len(t, pod.Spec.Containers, 2)
	assert.Equal(t, DefaultContainerName, pod.Spec.Containers[1].Name)
	assert.Nil(t, pod.Spec.Containers[1].RestartPolicy)
	assert.Len(t, pod.Spec.InitContainers, 1)

	pod = shopPod(nil)
	s, _, err = Injector{Mode: ModeClassic}.Inject(pod)
	require.NoError(t, err)
	assert.Equal(t, ModeClassic, s.Mode, "the injector's default mode")
	assert.Len(t, pod.Spec.Containers, 2)
}

// What the sidecar is made of: the Secret of its node ID, mounted
// read-only; the pod named through the downward API; the drain hook and a
// grace period long enough for it; a locked-down security context.
func TestInjectSidecarContainer(t *testing.T) {
	pod := shopPod(map[string]string{"legate.dev/shutdown-manager.drain-time": "45", "legate.dev/envoy-extra-args": "--log-level debug"})
	s, _, err := testInjector().Inject(pod)
	require.NoError(t, err)
	c := pod.Spec.InitContainers[0]
	vol := pod.Spec.Volumes[len(pod.Spec.Volumes)-1]
	assert.Equal(t, DefaultTLSVolume, vol.Name)
	assert.Equal(t, s.SecretName(), vol.Secret.SecretName)
	assert.Equal(t, []corev1.VolumeMount{{Name: DefaultTLSVolume, MountPath: "/etc/legate/proxy", ReadOnly: true}}, c.VolumeMounts)
	assert.Equal(t, "metadata.name", c.Env[0].ValueFrom.FieldRef.FieldPath)
	assert.Equal(t, podNameVar, c.Env[0].Name)
	assert.Equal(t, "--config-yaml", c.Args[0])
	assert.Contains(t, c.Args[1], `"pod_name":"$(POD_NAME)"`)
	assert.Equal(t, []string{"--disable-hot-restart", "--drain-time-s", "45", "--drain-strategy", "gradual", "--log-level", "debug"}, c.Args[2:])
	require.NotNil(t, c.Lifecycle)
	hook := c.Lifecycle.PreStop.Exec.Command
	assert.Equal(t, []string{"127.0.0.1", "9901", "45"}, hook[len(hook)-3:])
	assert.Equal(t, int64(45+drainMargin), *pod.Spec.TerminationGracePeriodSeconds)
	sc := c.SecurityContext
	assert.Equal(t, int64(101), *sc.RunAsUser)
	assert.True(t, *sc.ReadOnlyRootFilesystem)
	assert.False(t, *sc.AllowPrivilegeEscalation)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	assert.Equal(t, resource.MustParse("100m"), c.Resources.Requests[corev1.ResourceCPU], "the injector's default")
	assert.Equal(t, DefaultContainerName+"/"+DefaultTLSVolume, pod.Annotations[InjectedAnnotation])

	long := int64(900)
	pod = shopPod(map[string]string{"legate.dev/shutdown-manager.drain-time": "0"})
	pod.Spec.TerminationGracePeriodSeconds = &long
	_, _, err = testInjector().Inject(pod)
	require.NoError(t, err)
	assert.Nil(t, pod.Spec.InitContainers[0].Lifecycle, "drain time 0: no hook")
	assert.Equal(t, int64(900), *pod.Spec.TerminationGracePeriodSeconds, "a longer grace period stays")
}

// Per resource the annotations win over the injector's defaults, and a
// default never contradicts them.
func TestMergeResources(t *testing.T) {
	q := resource.MustParse
	def := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: q("100m"), corev1.ResourceMemory: q("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: q("128Mi")},
	}
	got := mergeResources(def, corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceMemory: q("256Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: q("50m")},
	})
	assert.Equal(t, corev1.ResourceList{corev1.ResourceCPU: q("50m"), corev1.ResourceMemory: q("256Mi")}, got.Requests, "the default CPU request is lowered to the pod's limit")
	assert.Equal(t, corev1.ResourceList{corev1.ResourceCPU: q("50m"), corev1.ResourceMemory: q("256Mi")}, got.Limits, "the default memory limit is raised to the pod's request")
	assert.Empty(t, mergeResources(corev1.ResourceRequirements{}, corev1.ResourceRequirements{}).Requests)
	got = mergeResources(corev1.ResourceRequirements{}, corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: q("1Gi")}})
	assert.Equal(t, corev1.ResourceList{corev1.ResourceMemory: q("1Gi")}, got.Requests, "a limit alone is the request, as the API server defaults it")
}

// A pod the sidecar cannot join is refused, naming the field or the
// annotation, and left as it was.
func TestInjectRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*corev1.Pod)
		want string
	}{
		{"host network", func(p *corev1.Pod) { p.Spec.HostNetwork = true }, "spec.hostNetwork is true"},
		{
			"a container of the sidecar's name", func(p *corev1.Pod) { p.Spec.Containers[0].Name = DefaultContainerName },
			`spec.containers has a container named "envoy-sidecar", the sidecar's name: rename it or name the sidecar otherwise with annotation legate.dev/container-name`,
		},
		{"an init container of the sidecar's name", func(p *corev1.Pod) { p.Spec.InitContainers[0].Name = DefaultContainerName }, "spec.initContainers has a container named"},
		{"a volume of the sidecar's", func(p *corev1.Pod) { p.Spec.Volumes[0].Name = DefaultTLSVolume }, `spec.volumes has a volume named "envoy-sidecar-tls"`},
		{
			"a port of the sidecar's", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 9902 },
			"spec.containers[shop] listens on port 9902, which the sidecar takes (annotation legate.dev/readiness-port)",
		},
		{"a port of the annotations", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 8080 }, "(annotation legate.dev/ports)"},
		{"a malformed annotation", func(p *corev1.Pod) { p.Annotations["legate.dev/admin.port"] = "http" }, `annotation legate.dev/admin.port: "http"`},
		{"a broken mark", func(p *corev1.Pod) { p.Annotations[InjectedAnnotation] = "yes" }, `annotation legate.dev/injected: "yes": want container/volume`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := shopPod(nil)
			tc.edit(pod)
			before := podJSON(t, pod)
			_, injected, err := testInjector().Inject(pod)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.False(t, injected)
			assert.Equal(t, before, podJSON(t, pod), "untouched")
		})
	}

	_, _, err := Injector{Mode: "sidecar"}.Inject(shopPod(nil))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `legate's injector is misconfigured: sidecar mode "sidecar"`)
}

func TestInjectLeavesPodsThatDoNotAsk(t *testing.T) {
	pod := shopPod(map[string]string{"legate.dev/ports": "not even valid"})
	pod.Labels = map[string]string{"app": "shop", InjectLabel: "disabled"}
	before := podJSON(t, pod)
	s, injected, err := testInjector().Inject(pod)
	require.NoError(t, err, "annotations of a pod that does not ask are not read")
	assert.False(t, injected)
	assert.Equal(t, Sidecar{}, s)
	assert.Equal(t, before, podJSON(t, pod))
}

func TestInjectorCheck(t *testing.T) {
	require.NoError(t, Injector{}.Check(), "the zero injector is the default one")
	require.NoError(t, Injector{XDSAddress: "10.0.0.7:18000", XDSServerName: "legate-xds.legate-system.svc"}.Check())
	for _, tc := range []struct {
		in   Injector
		want string
	}{
		{Injector{XDSAddress: "legate-xds"}, `xDS address "legate-xds": want host:port`},
		{Injector{XDSAddress: "legate-xds:0"}, `port "0": want 1 to 65535`},
		{Injector{XDSAddress: "Legate_XDS:18000"}, `host "Legate_XDS" is neither an IP address nor a DNS name`},
		{Injector{XDSServerName: "not a name"}, `xDS server name "not a name"`},
		{Injector{Mode: "sidecar"}, `sidecar mode "sidecar": want native or classic`},
		{Injector{Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		}}, "default request: 2 is above default limit (1)"},
	} {
		err := tc.in.Check()
		require.Error(t, err, "%+v", tc.in)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func TestPullPolicy(t *testing.T) {
	assert.Equal(t, corev1.PullIfNotPresent, pullPolicy("envoyproxy/envoy:v1.36.2"))
	assert.Equal(t, corev1.PullAlways, pullPolicy("envoyproxy/envoy:latest"))
	assert.Equal(t, corev1.PullAlways, pullPolicy("registry:5000/envoy"))
	assert.Equal(t, corev1.PullIfNotPresent, pullPolicy("registry:5000/envoy@sha256:abc"))
}
