package kube

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/pki/kubepki"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
	"github.com/legate-dev/legate/webhook"
)

// BenchmarkAdmission times, through a real API server that calls legate's
// webhooks over TLS (config/webhook), the creation of a Pod that asks for
// a sidecar (the API server calls the mutating webhook: decode, inject,
// the certificate check, the patch) beside, in the same iteration, a Pod
// that does not ask (the objectSelector skips the webhook: the baseline),
// and the creation of an EnvoyConfig (the validating webhook renders it
// with the policies in force). Each reports p50/p99; the webhook's own
// share is the difference between the two Pod creations.
func BenchmarkAdmission(b *testing.B) {
	cluster := envtest.StartWithWebhooks(b)
	scheme, err := controller.Scheme()
	require.NoError(b, err)
	c, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	require.NoError(b, err)
	ctx := context.Background()
	require.NoError(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "legate-system"}}))
	start(b, cluster.Config, func(o *controller.Options) {
		o.WebhookAddr, o.WebhookCertDir = cluster.Webhooks.Addr, cluster.Webhooks.CertDir
		o.Injector = webhook.Injector{XDSAddress: "legate-xds.legate-system.svc:18000"}
		o.PKI = &kubepki.Options{CASecret: "legate-ca", XDSSecret: "legate-xds-tls", XDSHosts: []string{"127.0.0.1"}}
	})

	pod := func(inject bool) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "web-", Namespace: "default", Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}},
		}
		if inject {
			p.Labels[webhook.InjectLabel] = webhook.Enabled
			p.Annotations = map[string]string{"legate.dev/node-id": "web", "legate.dev/ports": "http:8443"}
		}
		return p
	}
	timed := func(obj client.Object) time.Duration {
		start := time.Now()
		require.NoError(b, c.Create(ctx, obj))
		return time.Since(start)
	}
	// Warm up: the first call of each webhook opens its connection and
	// fills the controller's caches.
	require.Eventually(b, func() bool { return c.Create(ctx, pod(true)) == nil }, time.Minute, 100*time.Millisecond)

	var injected, plain, validated []time.Duration
	b.ResetTimer()
	for i := range b.N {
		injected = append(injected, timed(pod(true)))
		plain = append(plain, timed(pod(false)))
		ec, err := xdsyaml.EnvoyConfig(fmt.Sprintf("edge-%d", i),
			xdsyaml.APIListener("greeter", "greeter", "routes"),
			xdsyaml.RouteConfiguration("routes", "greeter", xdsyaml.Route{Cluster: "a"}),
			xdsyaml.EDSCluster("a"), xdsyaml.Endpoints("a", 8080))
		require.NoError(b, err)
		validated = append(validated, timed(ec))
	}
	b.StopTimer()
	report(b, "pod-injected", injected)
	report(b, "pod-plain", plain)
	report(b, "envoyconfig-validated", validated)
}

// BenchmarkAdmissionBurst creates, back to back through a real API server
// that calls legate's webhooks over TLS, 30 plain Pods (the objectSelector
// skips the webhook: the baseline), then 30 Pods that ask for a sidecar,
// each for a node ID nobody has used yet (30 new workloads), then 30 that
// ask for one node ID already in use, with the controller running as it
// does in a cluster: its PKI on, so that every injected Pod's proxy
// certificate is issued by the proxy-certificates reconciler while the
// next Pods are admitted. Run it with -benchtime 1x; each iteration is
// one burst of each kind.
func BenchmarkAdmissionBurst(b *testing.B) {
	for _, tc := range []struct {
		name string
		qps  func(*rest.Config)
	}{
		// envtest's config allows 1 000 requests/s; `legate controller
		// --kubeconfig` gets client-go's defaults (QPS 0: 5/s, burst 10).
		{"envtest-config", func(*rest.Config) {}},
		{"kubeconfig-flag", func(cfg *rest.Config) { cfg.QPS, cfg.Burst = 0, 0 }},
	} {
		b.Run(tc.name, func(b *testing.B) { admissionBurst(b, tc.qps) })
	}
}

func admissionBurst(b *testing.B, qps func(*rest.Config)) {
	const burst = 30
	cluster := envtest.StartWithWebhooks(b)
	scheme, err := controller.Scheme()
	require.NoError(b, err)
	c, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	require.NoError(b, err)
	ctx := context.Background()
	require.NoError(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "legate-system"}}))
	ctlCfg := rest.CopyConfig(cluster.Config)
	qps(ctlCfg)
	start(b, ctlCfg, func(o *controller.Options) {
		o.WebhookAddr, o.WebhookCertDir = cluster.Webhooks.Addr, cluster.Webhooks.CertDir
		o.Injector = webhook.Injector{XDSAddress: "legate-xds.legate-system.svc:18000"}
		o.PKI = &kubepki.Options{CASecret: "legate-ca", XDSSecret: "legate-xds-tls", XDSHosts: []string{"127.0.0.1"}}
	})
	pod := func(node string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "web-", Namespace: "default", Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}},
		}
		if node != "" {
			p.Labels[webhook.InjectLabel] = webhook.Enabled
			p.Annotations = map[string]string{"legate.dev/node-id": node, "legate.dev/ports": "http:8443"}
		}
		return p
	}
	timed := func(obj client.Object) time.Duration {
		start := time.Now()
		require.NoError(b, c.Create(ctx, obj))
		return time.Since(start)
	}
	require.Eventually(b, func() bool { return c.Create(ctx, pod("shared")) == nil }, time.Minute, 100*time.Millisecond)
	// The shared node's certificate is issued before the bursts: "existing"
	// means a node ID whose Secret is there.
	require.Eventually(b, func() bool {
		return c.Get(ctx, client.ObjectKey{Namespace: "default", Name: pki.ProxySecretName("shared")}, &corev1.Secret{}) == nil
	}, time.Minute, 10*time.Millisecond)

	var plain, fresh, existing []time.Duration
	b.ResetTimer()
	for i := range b.N {
		for range burst {
			plain = append(plain, timed(pod("")))
		}
		for j := range burst {
			fresh = append(fresh, timed(pod(fmt.Sprintf("web-%d-%d", i, j))))
		}
		for range burst {
			existing = append(existing, timed(pod("shared")))
		}
	}
	b.StopTimer()
	report(b, "pod-plain", plain)
	report(b, "pod-injected-new-node", fresh)
	report(b, "pod-injected-existing-node", existing)
}
