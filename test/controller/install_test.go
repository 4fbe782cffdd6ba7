package controller_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/pki/kubepki"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/webhook"
)

// apply builds config/<install> with kustomize's own library (what
// kubectl apply -k runs) and applies every object it yields server-side,
// as kubectl apply --server-side -k would: a layout kubectl's kustomize
// refuses (a resource outside the kustomization's directory) fails here.
func apply(t *testing.T, c client.Client, install string) {
	t.Helper()
	dir := filepath.Join("..", "..", "config", install)
	built, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err, "kubectl kustomize config/%s", install)
	require.NotEmpty(t, built.Resources(), "config/%s builds no object", install)
	for _, res := range built.Resources() {
		m, err := res.Map()
		require.NoError(t, err)
		u := &unstructured.Unstructured{Object: m}
		if strings.HasSuffix(u.GetKind(), "WebhookConfiguration") && exists(t, c, u) {
			continue // envtest registered it from the same file, pointed at the test's listener
		}
		err = c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("kubectl"), client.ForceOwnership)
		require.NoError(t, err, "config/%s: %s %s", install, u.GetKind(), u.GetName())
	}
}

// exists reports whether the API server holds an object of u's kind and
// name.
func exists(t *testing.T, c client.Client, u *unstructured.Unstructured) bool {
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(u.GroupVersionKind())
	err := c.Get(context.Background(), client.ObjectKeyFromObject(u), got)
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

// asServiceAccount is cfg impersonating the service account the installs
// create.
func asServiceAccount(cfg *rest.Config) *rest.Config {
	asSA := rest.CopyConfig(cfg)
	asSA.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:legate-system:legate",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:legate-system", "system:authenticated"},
	}
	return asSA
}

// The install of config/default applies to a real API server, and the
// controller, electing itself leader as the Deployment's replicas do, does
// its work as the service account it creates, with exactly the permissions
// of the generated ClusterRole: with its own PKI (as the Deployment runs
// it) it creates its CA, issues the webhooks' serving certificate and
// writes its CA into the webhook configurations, so that the API server
// calls its webhooks; they validate an EnvoyConfig and inject a Pod whose
// proxy certificate it then issues.
func TestControllerRunsWithItsOwnRole(t *testing.T) {
	t.Parallel()
	// The API server reaches the webhooks at a local address instead of
	// the Service legate-webhook (envtest rewrites the configurations).
	cluster := envtest.StartWithWebhooks(t)
	scheme, err := controller.Scheme()
	require.NoError(t, err)
	c, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	apply(t, c, "default")
	startWith(t, asServiceAccount(cluster.Config), func(o *controller.Options) {
		o.LeaderElect, o.Replica, o.RetryPeriod = true, "legate-0", 200*time.Millisecond
		o.WebhookAddr, o.Injector = cluster.Webhooks.Addr, testInjector
		o.PKI = &kubepki.Options{
			CASecret: "legate-ca", XDSSecret: "legate-xds-tls", XDSHosts: []string{"127.0.0.1"},
			WebhookSecret: "legate-webhook-tls", WebhookHosts: []string{"127.0.0.1"},
		}
	})
	ctx := context.Background()

	ec := sample(t)
	require.Eventually(t, func() bool {
		err := c.Create(ctx, ec.DeepCopy())
		return err == nil
	}, 60*time.Second, 200*time.Millisecond, "the API server trusts the webhooks' certificate once legate wrote its CA into the caBundle")
	var mut admissionregistrationv1.MutatingWebhookConfiguration
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: webhook.InjectorConfiguration}, &mut))
	var ca corev1.Secret
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "legate-system", Name: "legate-ca"}, &ca))
	for _, w := range mut.Webhooks {
		assert.Equal(t, string(ca.Data[corev1.TLSCertKey]), string(w.ClientConfig.CABundle), w.Name)
	}
	require.Eventually(t, func() bool {
		got := get(t, c, ec)
		return got.Status.CacheState != nil && *got.Status.CacheState == v1alpha1.CacheInSync
	}, 60*time.Second, 50*time.Millisecond, "the controller reconciles as its service account")

	broken := sample(t)
	broken.Name, broken.Spec.NodeID = "broken", "broken"
	broken.Spec.Resources[0].Value.Raw = []byte(`{"name":"backend","type":"STRICT_DNS","connect_timeout":"-1s"}`)
	refusal(t, c.Create(ctx, broken))

	pod := injectedPod("default", "edge")
	require.NoError(t, c.Create(ctx, pod))
	require.NotEmpty(t, pod.Spec.InitContainers, "the Pod is injected")
	require.Eventually(t, func() bool {
		return c.Get(ctx, client.ObjectKey{Namespace: "default", Name: pki.ProxySecretName("edge")}, &corev1.Secret{}) == nil
	}, 30*time.Second, 50*time.Millisecond, "the proxy's certificate is issued as the service account")
}

// The namespaced install (config/namespaced) grants the generated role in
// two namespaces only; the controller, watching team-a as the install's
// ConfigMap says, serves an EnvoyConfig there as its service account.
func TestNamespacedInstall(t *testing.T) {
	t.Parallel()
	cluster := envtest.Start(t)
	scheme, err := controller.Scheme()
	require.NoError(t, err)
	c, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	apply(t, c, "namespaced")
	var watch corev1.ConfigMap
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "legate-system", Name: "legate-watch"}, &watch))
	startWatching(t, asServiceAccount(cluster.Config), watch.Data["namespace"])

	ec := sample(t)
	ec.Namespace = watch.Data["namespace"]
	require.NoError(t, c.Create(context.Background(), ec))
	require.Eventually(t, func() bool {
		got := get(t, c, ec)
		return got.Status.CacheState != nil && *got.Status.CacheState == v1alpha1.CacheInSync
	}, 60*time.Second, 50*time.Millisecond, "the controller reconciles its namespace with RoleBindings only")
}
