package helm_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/pki/kubepki"
	"github.com/legate-dev/legate/render"
	legatecue "github.com/legate-dev/legate/render/cue"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/webhook"
)

// apply is helm install's apply, server-side as kubectl apply
// --server-side would do it from helm template: the CRDs first, then the
// templates' objects in order. Webhook configurations that envtest
// registered (pointed at the test's listener instead of the Service) are
// kept as envtest wrote them.
func apply(t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	for _, u := range append(crds(t), objs...) {
		if strings.HasSuffix(u.GetKind(), "WebhookConfiguration") && exists(t, c, u) {
			continue
		}
		err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("helm"), client.ForceOwnership)
		require.NoError(t, err, "charts/legate: %s %s", u.GetKind(), u.GetName())
	}
}

func exists(t *testing.T, c client.Client, u *unstructured.Unstructured) bool {
	t.Helper()
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(u.GroupVersionKind())
	err := c.Get(context.Background(), client.ObjectKeyFromObject(u), got)
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

// asServiceAccount is cfg impersonating the chart's service account in
// namespace.
func asServiceAccount(cfg *rest.Config, namespace string) *rest.Config {
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + namespace + ":legate",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
	return as
}

var schema = sync.OnceValue(legatecue.NewSchema)

// start runs legate controller as the chart's Deployment does, with what
// change sets, until the test ends.
func start(t *testing.T, cfg *rest.Config, change func(*controller.Options)) {
	t.Helper()
	crlog.SetLogger(logr.Discard())
	opts := controller.Options{
		Config: cfg, Namespace: "legate-system", XDSAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", StateDir: t.TempDir(),
		Render: func(policies map[string][]byte) render.Options {
			stage := legatecue.NewStage(schema()).WithPolicies(policies)
			return render.Options{Generators: []render.Generator{stage}, Checks: []render.Check{stage}}
		},
		Log: logr.Discard(), FetchAllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	}
	change(&opts)
	ctl, err := controller.New(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("the controller did not stop")
		}
	})
}

// sample is config/samples/envoyconfig.yaml without its TLS secret, in
// namespace.
func sample(t *testing.T, namespace string) *v1alpha1.EnvoyConfig {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "envoyconfig.yaml"))
	require.NoError(t, err)
	var ec v1alpha1.EnvoyConfig
	require.NoError(t, yaml.UnmarshalStrict(data, &ec))
	ec.Namespace = namespace
	ec.Spec.Resources = ec.Spec.Resources[:2]
	return &ec
}

func inSync(t *testing.T, c client.Client, ec *v1alpha1.EnvoyConfig) bool {
	var got v1alpha1.EnvoyConfig
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(ec), &got))
	return got.Status.CacheState != nil && *got.Status.CacheState == v1alpha1.CacheInSync
}

// helm install with the defaults into legate-system, applied to a real
// API server; the controller, as the chart's service account with its
// ClusterRole, elects itself, creates its CA, writes it into the webhook
// configurations the API server calls, and serves an EnvoyConfig.
func TestHelmInstallRunsAsItsServiceAccount(t *testing.T) {
	cluster := envtest.StartWithWebhooks(t)
	scheme, err := controller.Scheme()
	require.NoError(t, err)
	c, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	ctx := context.Background()
	// helm install --create-namespace
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "legate-system"}}))
	objs, err := renderChart(t, "legate-system", nil)
	require.NoError(t, err)
	apply(t, c, objs)

	start(t, asServiceAccount(cluster.Config, "legate-system"), func(o *controller.Options) {
		o.LeaderElect, o.Replica, o.RetryPeriod = true, "legate-0", 200*time.Millisecond
		o.WebhookAddr, o.Injector = cluster.Webhooks.Addr, webhook.Injector{XDSAddress: "legate-xds.legate-system.svc:18000"}
		o.PKI = &kubepki.Options{
			CASecret: "legate-ca", XDSSecret: "legate-xds-tls", XDSHosts: []string{"127.0.0.1"},
			WebhookSecret: "legate-webhook-tls", WebhookHosts: []string{"127.0.0.1"},
		}
	})
	ec := sample(t, "default")
	require.Eventually(t, func() bool {
		return c.Create(ctx, ec.DeepCopy()) == nil
	}, 60*time.Second, 200*time.Millisecond, "the API server trusts the webhooks once legate wrote its CA into the caBundle")
	var mut admissionregistrationv1.MutatingWebhookConfiguration
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: webhook.InjectorConfiguration}, &mut))
	var ca corev1.Secret
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "legate-system", Name: "legate-ca"}, &ca))
	for _, w := range mut.Webhooks {
		assert.Equal(t, string(ca.Data[corev1.TLSCertKey]), string(w.ClientConfig.CABundle), w.Name)
	}
	require.Eventually(t, func() bool { return inSync(t, c, ec) }, 60*time.Second, 50*time.Millisecond,
		"the controller reconciles as the chart's service account")
}

// scope: namespace grants the ClusterRole in the watched namespace and the
// release's only: the controller serves team-a as the chart's service
// account, and that account reads nothing in another namespace.
func TestHelmNamespacedInstall(t *testing.T) {
	cluster := envtest.Start(t)
	scheme, err := controller.Scheme()
	require.NoError(t, err)
	c, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "legate-system"}}))
	objs, err := renderChart(t, "legate-system", map[string]any{
		"scope": "namespace", "watchNamespace": "team-a", "createWatchNamespace": true,
		"webhooks": map[string]any{"admission": false, "injection": false},
	})
	require.NoError(t, err)
	apply(t, c, objs)

	sa, err := client.New(asServiceAccount(cluster.Config, "legate-system"), client.Options{Scheme: scheme})
	require.NoError(t, err)
	err = sa.List(ctx, &v1alpha1.EnvoyConfigList{}, client.InNamespace("default"))
	assert.True(t, apierrors.IsForbidden(err), "the chart's account lists EnvoyConfigs of another namespace: %v", err)

	start(t, asServiceAccount(cluster.Config, "legate-system"), func(o *controller.Options) { o.WatchNamespace = "team-a" })
	ec := sample(t, "team-a")
	require.NoError(t, c.Create(ctx, ec))
	require.Eventually(t, func() bool { return inSync(t, c, ec) }, 60*time.Second, 50*time.Millisecond,
		"the controller reconciles its namespace with the chart's RoleBindings only")
}
