package controller_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/envoydeployment"
	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/pki/kubepki"
	"github.com/legate-dev/legate/test/bootstrapcheck"
	"github.com/legate-dev/legate/test/internal/backend"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
	"github.com/legate-dev/legate/test/xdsclient"
)

// marin3rDeployment is one of MARIN3R's own EnvoyDeployment manifests
// with only its apiVersion changed (config/v1alpha1/testdata/marin3r).
func marin3rDeployment(t *testing.T, file string) *v1alpha1.EnvoyDeployment {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "v1alpha1", "testdata", "marin3r", file))
	require.NoError(t, err)
	var ed v1alpha1.EnvoyDeployment
	require.NoError(t, yaml.UnmarshalStrict(data, &ed))
	ed.Namespace = "default"
	return &ed
}

// edit reads obj, changes it and writes it back, again on a conflict with
// the controller's own writes.
func edit(t *testing.T, c client.Client, obj client.Object, change func()) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change()
		return c.Update(context.Background(), obj)
	}))
}

func envoyContainerOf(t *testing.T, spec corev1.PodSpec) corev1.Container {
	t.Helper()
	i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == "envoy" })
	require.GreaterOrEqual(t, i, 0, "the pods run an envoy container")
	return spec.Containers[i]
}

// MARIN3R's kuard EnvoyDeployment, applied as it is, becomes a
// ServiceAccount, a Deployment whose pods carry the sidecar's bootstrap
// (valid Envoy), an HPA, a PDB and a Service, all owned by it; legate
// issues the node's client certificate, which a grpc-go xDS client is
// served the node with; the status names the node and the served
// revision. An edit rolls the pods, drift is repaired, a deleted child
// comes back, a DaemonSet with patches is made, and a reference to
// another namespace's EnvoyConfig is refused.
func TestEnvoyDeploymentRunsAFleet(t *testing.T) {
	t.Parallel()
	c, _, ctl := admitted(t, func(o *controller.Options) {
		o.PKI = &kubepki.Options{CASecret: "legate-ca", XDSSecret: "legate-xds-tls", XDSHosts: []string{"127.0.0.1"}}
	})
	ctx := context.Background()
	a := backend.Start(t, "a")
	ec := envoyConfig(t, "shop",
		xdsyaml.APIListener("greeter", "greeter", "routes"),
		xdsyaml.RouteConfiguration("routes", "greeter", xdsyaml.Route{Cluster: "a"}),
		xdsyaml.EDSCluster("a"), xdsyaml.Endpoints("a", a.Port),
	)
	ec.Name = "kuard" // the example's envoyConfigRef
	require.NoError(t, c.Create(ctx, ec))
	ed := marin3rDeployment(t, "envoydeployment-kuard.yaml")
	require.NoError(t, c.Create(ctx, ed))

	key := client.ObjectKey{Namespace: "default", Name: envoydeployment.Name("kuard")}
	var got v1alpha1.EnvoyDeployment
	require.Eventually(t, func() bool {
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(ed), &got))
		return got.Status.ServedRevision != nil && got.Status.NodeID == "shop"
	}, 60*time.Second, 50*time.Millisecond, "the status names the node and the revision it is served")
	var published v1alpha1.EnvoyConfig
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(ec), &published))
	require.NotNil(t, published.Status.PublishedVersion)
	assert.Equal(t, *published.Status.PublishedVersion, got.Status.ServedRevision.Version, "the revision the EnvoyConfig publishes")
	assert.Equal(t, published.Status.Commit, got.Status.ServedRevision.Revision)
	assert.Equal(t, "Deployment", got.Status.Kind)
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, envoydeployment.ReasonProgressing, ready.Reason, "no kubelet runs the pods here")

	var d appsv1.Deployment
	require.NoError(t, c.Get(ctx, key, &d))
	assert.True(t, metav1.IsControlledBy(&d, &got))
	for _, obj := range []client.Object{&corev1.ServiceAccount{}, &corev1.Service{}, &policyv1.PodDisruptionBudget{}, &autoscalingv2.HorizontalPodAutoscaler{}} {
		require.NoError(t, c.Get(ctx, key, obj), "%T", obj)
		assert.True(t, metav1.IsControlledBy(obj, &got), "%T", obj)
	}
	var hpa autoscalingv2.HorizontalPodAutoscaler
	require.NoError(t, c.Get(ctx, key, &hpa))
	assert.Equal(t, int32(10), hpa.Spec.MaxReplicas)
	envoy := envoyContainerOf(t, d.Spec.Template.Spec)
	i := slices.Index(envoy.Args, "--config-yaml")
	require.GreaterOrEqual(t, i, 0)
	bs := bootstrapcheck.Decode(t, envoy.Args[i+1], map[string]string{"POD_NAME": "envoy-kuard-1", "POD_NAMESPACE": "default"})
	assert.Equal(t, "shop", bs.GetNode().GetId())
	assert.Contains(t, envoy.Lifecycle.PreStop.Exec.Command[2], "drain_listeners")

	// The node's certificate is issued before any pod exists, and the xDS
	// server serves the node to it.
	var secret corev1.Secret
	require.Eventually(t, func() bool {
		return c.Get(ctx, client.ObjectKey{Namespace: "default", Name: pki.ProxySecretName("shop")}, &secret) == nil
	}, 30*time.Second, 50*time.Millisecond, "the proxies' certificate is issued")
	dir := t.TempDir()
	writeSecret(t, &secret, dir)
	files := &xdsclient.TLSFiles{CAFile: filepath.Join(dir, pki.ProxyCAKey), CertFile: filepath.Join(dir, pki.ProxyCertKey), KeyFile: filepath.Join(dir, pki.ProxyKeyKey)}
	proxy := backend.DialBootstrap(t, xdsclient.Bootstrap{ServerAddr: ctl.XDSAddr(), NodeID: "shop", Metadata: map[string]any{"pod_name": "envoy-kuard-1"}, TLS: files}, "greeter")
	require.Eventually(t, func() bool { return proxy.Call() == "a" }, 60*time.Second, 50*time.Millisecond, "served its node with the issued certificate")

	// An edit rolls the pods: the template and its hash change.
	hash := d.Spec.Template.Annotations[envoydeployment.TemplateHashAnnotation]
	require.NotEmpty(t, hash)
	edit(t, c, &got, func() { got.Spec.Image = ptr.To("envoyproxy/envoy:v1.35.0") })
	require.Eventually(t, func() bool {
		require.NoError(t, c.Get(ctx, key, &d))
		return d.Spec.Template.Annotations[envoydeployment.TemplateHashAnnotation] != hash
	}, 30*time.Second, 50*time.Millisecond, "the pod template rolls")
	assert.Equal(t, "envoyproxy/envoy:v1.35.0", envoyContainerOf(t, d.Spec.Template.Spec).Image)

	// Drift is repaired: a hand edit of the template is taken back.
	edit(t, c, &d, func() { d.Spec.Template.Spec.Containers[0].Image = "evil/envoy" })
	require.Eventually(t, func() bool {
		require.NoError(t, c.Get(ctx, key, &d))
		return envoyContainerOf(t, d.Spec.Template.Spec).Image == "envoyproxy/envoy:v1.35.0"
	}, 30*time.Second, 50*time.Millisecond, "the drift is repaired")

	// A deleted child comes back. Its fleet's EnvoyConfig has no proxy
	// whose answers would change its status: the Service's own watch
	// brings the reconcile.
	quiet := envoyConfig(t, "quiet", xdsyaml.EDSCluster("a"), xdsyaml.Endpoints("a", a.Port))
	require.NoError(t, c.Create(ctx, quiet))
	q := &v1alpha1.EnvoyDeployment{ObjectMeta: metav1.ObjectMeta{Name: "quiet", Namespace: "default"}, Spec: v1alpha1.EnvoyDeploymentSpec{
		EnvoyConfigRef: "quiet", Ports: []v1alpha1.EnvoyDeploymentPort{{Name: "http", Port: 8080}},
	}}
	require.NoError(t, c.Create(ctx, q))
	qKey := client.ObjectKey{Namespace: "default", Name: envoydeployment.Name("quiet")}
	var svc corev1.Service
	require.Eventually(t, func() bool {
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(q), q))
		return q.Status.ServedRevision != nil && c.Get(ctx, qKey, &svc) == nil
	}, 30*time.Second, 50*time.Millisecond, "the quiet fleet is made and served")
	// Twice: the first deletion may meet a reconcile the fleet's own
	// creation queued; the second meets none but the Service's watch.
	for range 2 {
		require.NoError(t, c.Delete(ctx, &svc))
		require.Eventually(t, func() bool {
			var again corev1.Service
			if c.Get(ctx, qKey, &again) != nil || again.UID == svc.UID {
				return false
			}
			svc = again
			return true
		}, 30*time.Second, 50*time.Millisecond, "the deleted Service is made again")
	}

	// A DaemonSet, patched.
	gw := &v1alpha1.EnvoyDeployment{ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "default"}, Spec: v1alpha1.EnvoyDeploymentSpec{
		EnvoyConfigRef: "kuard", Mode: ptr.To(v1alpha1.ModeDaemonSet),
		Ports: []v1alpha1.EnvoyDeploymentPort{{Name: "http", Port: 8080}},
		Patch: &v1alpha1.EnvoyDeploymentPatches{
			DaemonSet: &v1alpha1.EnvoyDeploymentPatch{Value: runtime.RawExtension{Raw: []byte(`{"spec":{"minReadySeconds":7}}`)}},
			Service:   &v1alpha1.EnvoyDeploymentPatch{Value: runtime.RawExtension{Raw: []byte(`{"spec":{"sessionAffinity":"ClientIP"}}`)}},
		},
	}}
	require.NoError(t, c.Create(ctx, gw))
	gwKey := client.ObjectKey{Namespace: "default", Name: envoydeployment.Name("gw")}
	var ds appsv1.DaemonSet
	require.Eventually(t, func() bool { return c.Get(ctx, gwKey, &ds) == nil && c.Get(ctx, gwKey, &svc) == nil },
		30*time.Second, 50*time.Millisecond, "the DaemonSet and its Service are made")
	assert.Equal(t, int32(7), ds.Spec.MinReadySeconds, "the patch is applied")
	assert.Equal(t, corev1.ServiceAffinityClientIP, svc.Spec.SessionAffinity)
	assert.Error(t, c.Get(ctx, gwKey, &appsv1.Deployment{}), "no Deployment in DaemonSet mode")

	// A reference to another namespace's EnvoyConfig is refused, naming
	// the field, and nothing is made.
	other := &v1alpha1.EnvoyDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "thief", Namespace: "default"},
		Spec:       v1alpha1.EnvoyDeploymentSpec{EnvoyConfigRef: "legate-system/kuard"},
	}
	require.NoError(t, c.Create(ctx, other))
	require.Eventually(t, func() bool {
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(other), other))
		return meta.IsStatusConditionTrue(other.Status.Conditions, v1alpha1.ConditionStalled)
	}, 30*time.Second, 50*time.Millisecond, "the cross-namespace reference is refused")
	ready = meta.FindStatusCondition(other.Status.Conditions, v1alpha1.ConditionReady)
	assert.Equal(t, envoydeployment.ReasonInvalidRef, ready.Reason)
	assert.Contains(t, ready.Message, "spec.envoyConfigRef")
	assert.Empty(t, other.Status.NodeID)
	assert.Error(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: envoydeployment.Name("thief")}, &appsv1.Deployment{}))

	// Changing the mode replaces the DaemonSet by a Deployment.
	edit(t, c, gw, func() { gw.Spec.Mode, gw.Spec.Patch.DaemonSet = nil, nil })
	require.Eventually(t, func() bool {
		return c.Get(ctx, gwKey, &appsv1.Deployment{}) == nil && c.Get(ctx, gwKey, &appsv1.DaemonSet{}) != nil
	}, 30*time.Second, 50*time.Millisecond, "the DaemonSet goes, a Deployment comes")

	// An object of the generated name that is not the EnvoyDeployment's
	// is not taken over.
	mine := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: envoydeployment.Name("taken"), Namespace: "default"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "x", Port: 1}}},
	}
	require.NoError(t, c.Create(ctx, mine))
	taken := &v1alpha1.EnvoyDeployment{ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: "default"}, Spec: v1alpha1.EnvoyDeploymentSpec{
		EnvoyConfigRef: "kuard", Ports: []v1alpha1.EnvoyDeploymentPort{{Name: "http", Port: 8080}},
	}}
	require.NoError(t, c.Create(ctx, taken))
	require.Eventually(t, func() bool {
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(taken), taken))
		ready := meta.FindStatusCondition(taken.Status.Conditions, v1alpha1.ConditionReady)
		return ready != nil && ready.Reason == envoydeployment.ReasonObjectConflict
	}, 30*time.Second, 50*time.Millisecond, "the conflict is reported")
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(mine), mine))
	assert.Empty(t, mine.OwnerReferences, "the user's Service stays the user's")
	assert.Equal(t, int32(1), mine.Spec.Ports[0].Port)
}
