package envoydeployment

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/test/bootstrapcheck"
	"github.com/legate-dev/legate/webhook"
)

var injector = webhook.Injector{XDSAddress: "legate-xds.legate-system.svc:18000"}

// marin3r reads one of MARIN3R's own manifests (config/v1alpha1/testdata).
func marin3r(t *testing.T, name string) *v1alpha1.EnvoyDeployment {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "config", "v1alpha1", "testdata", "marin3r", name))
	require.NoError(t, err)
	var ed v1alpha1.EnvoyDeployment
	require.NoError(t, yaml.UnmarshalStrict(data, &ed))
	ed.Namespace, ed.UID = "shop", "uid-1"
	return &ed
}

func build(t *testing.T, ed *v1alpha1.EnvoyDeployment) Objects {
	t.Helper()
	o, err := Build(ed, "edge", injector)
	require.NoError(t, err)
	return o
}

func envoyOf(t *testing.T, spec corev1.PodSpec) corev1.Container {
	t.Helper()
	i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == containerName })
	require.GreaterOrEqual(t, i, 0, "no envoy container")
	return spec.Containers[i]
}

// configArg is the value of the container's --config-yaml.
func configArg(t *testing.T, c corev1.Container) string {
	t.Helper()
	i := slices.Index(c.Args, "--config-yaml")
	require.GreaterOrEqual(t, i, 0)
	return c.Args[i+1]
}

// MARIN3R's kuard example: a Deployment whose count the autoscaler sets,
// the HPA with the example's metric, a PDB, a Service of its port, the
// container with its resources and arguments, every object owned.
func TestBuildMARIN3RKuard(t *testing.T) {
	ed := marin3r(t, "envoydeployment-kuard.yaml")
	o := build(t, ed)
	d, ok := o.Workload.(*appsv1.Deployment)
	require.True(t, ok)
	assert.Equal(t, "envoy-kuard", d.Name)
	assert.Nil(t, d.Spec.Replicas, "the HPA sets the count")
	require.NotNil(t, o.HPA)
	assert.Equal(t, int32(10), o.HPA.Spec.MaxReplicas)
	assert.Equal(t, int32(1), *o.HPA.Spec.MinReplicas)
	assert.Equal(t, int32(50), *o.HPA.Spec.Metrics[0].Resource.Target.AverageUtilization)
	assert.Equal(t, "envoy-kuard", o.HPA.Spec.ScaleTargetRef.Name)
	require.NotNil(t, o.PDB)
	assert.Equal(t, int32(1), o.PDB.Spec.MinAvailable.IntVal)
	require.NotNil(t, o.Service)
	assert.Equal(t, int32(8443), o.Service.Spec.Ports[0].Port)
	assert.Equal(t, corev1.ServiceTypeClusterIP, o.Service.Spec.Type)
	for _, obj := range o.All() {
		require.Len(t, obj.GetOwnerReferences(), 1, "%T", obj)
		assert.Equal(t, "kuard", obj.GetOwnerReferences()[0].Name)
		assert.True(t, *obj.GetOwnerReferences()[0].Controller)
		assert.Equal(t, "shop", obj.GetNamespace())
	}

	tpl := d.Spec.Template
	assert.Equal(t, "kuard", tpl.Labels[InstanceLabel])
	assert.Equal(t, "marin3r", tpl.Labels["app.kubernetes.io/name"], "MARIN3R's Services keep selecting the pods")
	assert.Equal(t, "injected", tpl.Labels[webhook.ProxyLabel], "legate issues the pods' certificates")
	assert.NotContains(t, tpl.Labels, webhook.InjectLabel, "the webhook has nothing to add")
	assert.Equal(t, "edge", tpl.Annotations["legate.dev/node-id"])
	assert.Equal(t, d.Annotations[TemplateHashAnnotation], tpl.Annotations[TemplateHashAnnotation])
	c := envoyOf(t, tpl.Spec)
	assert.Equal(t, corev1.ContainerPort{Name: "https", ContainerPort: 8443, Protocol: corev1.ProtocolTCP}, c.Ports[0])
	assert.Equal(t, []string{"--component-log-level", "http:debug"}, c.Args[len(c.Args)-2:])
	assert.Equal(t, "128Mi", ptr.To(c.Resources.Limits[corev1.ResourceMemory]).String())
	require.NotNil(t, c.Lifecycle, "drain on termination")
	assert.Contains(t, c.Lifecycle.PreStop.Exec.Command[2], "drain_listeners")
	assert.GreaterOrEqual(t, *tpl.Spec.TerminationGracePeriodSeconds, int64(300+1))
	vol := tpl.Spec.Volumes[slices.IndexFunc(tpl.Spec.Volumes, func(v corev1.Volume) bool { return v.Secret != nil })]
	assert.Equal(t, pki.ProxySecretName("edge"), vol.Secret.SecretName)
	assert.Equal(t, "envoy-kuard", tpl.Spec.ServiceAccountName)

	bs := bootstrapcheck.Decode(t, configArg(t, c), map[string]string{"POD_NAME": "envoy-kuard-x", "POD_NAMESPACE": "shop"})
	assert.Equal(t, "edge", bs.GetNode().GetId())
	assert.Contains(t, configArg(t, c), `"path":"/dev/stdout"`, "adminAccessLogPath")
}

// The sample of MARIN3R: one static replica, no autoscaler, no PDB.
func TestBuildMARIN3RSample(t *testing.T) {
	ed := marin3r(t, "envoydeployment-sample.yaml")
	o := build(t, ed)
	d := o.Workload.(*appsv1.Deployment)
	assert.Equal(t, int32(1), *d.Spec.Replicas)
	assert.Nil(t, o.HPA)
	assert.Nil(t, o.PDB)
	require.NotNil(t, o.Service)
}

func TestBuildVariants(t *testing.T) {
	base := func() *v1alpha1.EnvoyDeployment {
		ed := &v1alpha1.EnvoyDeployment{}
		ed.Name, ed.Namespace, ed.UID = "gw", "shop", "uid-2"
		ed.Spec.EnvoyConfigRef = "gw"
		ed.Spec.Ports = []v1alpha1.EnvoyDeploymentPort{{Name: "http", Port: 8080, ServicePort: ptr.To[int32](80)}}
		return ed
	}
	t.Run("DaemonSet", func(t *testing.T) {
		ed := base()
		ed.Spec.Mode = ptr.To(v1alpha1.ModeDaemonSet)
		ed.Spec.NodeSelector = map[string]string{"role": "edge"}
		ed.Spec.Tolerations = []corev1.Toleration{{Key: "edge", Operator: corev1.TolerationOpExists}}
		o := build(t, ed)
		ds, ok := o.Workload.(*appsv1.DaemonSet)
		require.True(t, ok)
		assert.Equal(t, "edge", ds.Spec.Template.Spec.NodeSelector["role"])
		assert.Len(t, ds.Spec.Template.Spec.Tolerations, 1)
		assert.Nil(t, o.HPA)
		assert.Equal(t, int32(80), o.Service.Spec.Ports[0].Port)
	})
	t.Run("Service and spread", func(t *testing.T) {
		ed := base()
		lb := corev1.ServiceTypeLoadBalancer
		ed.Spec.Service = &v1alpha1.EnvoyDeploymentService{Type: &lb, Annotations: map[string]string{"lb": "internal"}, LoadBalancerSourceRanges: []string{"10.0.0.0/8"}}
		ed.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.ScheduleAnyway}}
		o := build(t, ed)
		assert.Equal(t, lb, o.Service.Spec.Type)
		assert.Equal(t, "internal", o.Service.Annotations["lb"])
		assert.Equal(t, []string{"10.0.0.0/8"}, o.Service.Spec.LoadBalancerSourceRanges)
		tsc := o.Workload.(*appsv1.Deployment).Spec.Template.Spec.TopologySpreadConstraints
		assert.Equal(t, "gw", tsc[0].LabelSelector.MatchLabels[InstanceLabel])
	})
	t.Run("strategic merge patch", func(t *testing.T) {
		ed := base()
		ed.Spec.Patch = &v1alpha1.EnvoyDeploymentPatches{Deployment: &v1alpha1.EnvoyDeploymentPatch{Value: runtime.RawExtension{Raw: []byte(
			`{"metadata":{"name":"renamed"},"spec":{"template":{"spec":{"priorityClassName":"edge","containers":[{"name":"envoy","env":[{"name":"EXTRA","value":"1"}]}]}}}}`)}}}
		o := build(t, ed)
		d := o.Workload.(*appsv1.Deployment)
		assert.Equal(t, "envoy-gw", d.Name, "a patch does not rename")
		assert.Equal(t, "edge", d.Spec.Template.Spec.PriorityClassName)
		c := envoyOf(t, d.Spec.Template.Spec)
		assert.NotEmpty(t, c.Args, "containers merge by name")
		assert.Contains(t, c.Env, corev1.EnvVar{Name: "EXTRA", Value: "1"})
		assert.Equal(t, "Deployment", d.Kind)
	})
	t.Run("JSON merge patch of the Service", func(t *testing.T) {
		ed := base()
		ed.Spec.Patch = &v1alpha1.EnvoyDeploymentPatches{Service: &v1alpha1.EnvoyDeploymentPatch{
			Type:  ptr.To(v1alpha1.PatchJSONMerge),
			Value: runtime.RawExtension{Raw: []byte(`{"spec":{"sessionAffinity":"ClientIP"}}`)},
		}}
		o := build(t, ed)
		assert.Equal(t, corev1.ServiceAffinityClientIP, o.Service.Spec.SessionAffinity)
	})
	t.Run("probes and drain", func(t *testing.T) {
		ed := base()
		ed.Spec.LivenessProbe = &v1alpha1.ProbeSpec{InitialDelaySeconds: 30, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 10}
		ed.Spec.ShutdownManager = &v1alpha1.ShutdownManager{DrainTime: ptr.To[int64](60), DrainStrategy: ptr.To("immediate")}
		o := build(t, ed)
		spec := o.Workload.(*appsv1.Deployment).Spec.Template.Spec
		c := envoyOf(t, spec)
		require.NotNil(t, c.LivenessProbe)
		assert.Equal(t, int32(10), c.LivenessProbe.FailureThreshold)
		assert.Equal(t, "/ready", c.LivenessProbe.HTTPGet.Path)
		assert.Contains(t, c.Args, "immediate")
		assert.Equal(t, int64(60+30), *spec.TerminationGracePeriodSeconds)
	})
}

// The template hash is stable for the same input and changes with the
// pod template, so that an edit rolls the pods.
func TestTemplateHash(t *testing.T) {
	ed := marin3r(t, "envoydeployment-sample.yaml")
	hash := func(ed *v1alpha1.EnvoyDeployment) string {
		return build(t, ed).Workload.GetAnnotations()[TemplateHashAnnotation]
	}
	h := hash(ed)
	require.NotEmpty(t, h)
	assert.Equal(t, h, hash(ed))
	ed.Spec.Image = ptr.To("envoyproxy/envoy:v1.35.0")
	assert.NotEqual(t, h, hash(ed))
	ed2 := marin3r(t, "envoydeployment-sample.yaml")
	ed2.Spec.Replicas = &v1alpha1.ReplicasSpec{Static: ptr.To[int32](3)}
	assert.Equal(t, h, hash(ed2), "scaling is no rollout")
}

func TestBuildRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*v1alpha1.EnvoyDeployment)
		want string
	}{
		"admin port clash": {func(ed *v1alpha1.EnvoyDeployment) { ed.Spec.Ports[0].Port = 9901 }, "spec.ports[0].port: 9901 is the admin port's"},
		"readiness clash":  {func(ed *v1alpha1.EnvoyDeployment) { ed.Spec.Ports[0].Port = 9902 }, "spec.ports[0].port: 9902 is the readiness listener's"},
		"long name":        {func(ed *v1alpha1.EnvoyDeployment) { ed.Name = string(make([]byte, 60)) }, "metadata.name"},
		"reserved label":   {func(ed *v1alpha1.EnvoyDeployment) { ed.Spec.PodLabels = map[string]string{"legate.dev/proxy": "x"} }, "spec.podLabels[legate.dev/proxy]"},
		"reserved annotation": {func(ed *v1alpha1.EnvoyDeployment) {
			ed.Spec.PodAnnotations = map[string]string{"marin3r.3scale.net/node-id": "x"}
		}, "spec.podAnnotations[marin3r.3scale.net/node-id]"},
		"patch of wrong shape": {func(ed *v1alpha1.EnvoyDeployment) {
			ed.Spec.Patch = &v1alpha1.EnvoyDeploymentPatches{PDB: &v1alpha1.EnvoyDeploymentPatch{Value: runtime.RawExtension{Raw: []byte(`{"spec":{"minAvailable":{"x":1}}}`)}}}
			ed.Spec.PodDisruptionBudget = &v1alpha1.PodDisruptionBudgetSpec{}
		}, "spec.patch.pdb.value"},
		"admin port on the readiness port": {func(ed *v1alpha1.EnvoyDeployment) { ed.Spec.AdminPort = ptr.To[int32](9902) }, "spec.adminPort"},
	} {
		t.Run(name, func(t *testing.T) {
			ed := marin3r(t, "envoydeployment-sample.yaml")
			tc.edit(ed)
			_, err := Build(ed, "edge", injector)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
