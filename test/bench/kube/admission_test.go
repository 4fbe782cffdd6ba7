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
	"github.com/legate-dev/legate/test/internal/ctltest"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
	"github.com/legate-dev/legate/webhook"
)

// injectingHome starts a real API server that calls legate's webhooks
// over TLS, and the controller serving them with its injector and PKI;
// ctlConfig, when set, changes the controller's client configuration. It
// returns the cluster, a client of it and the controller.
func injectingHome(b *testing.B, ctlConfig func(*rest.Config), change ...func(*controller.Options)) (*envtest.Cluster, client.Client, *controller.Controller) {
	b.Helper()
	cluster := envtest.StartWithWebhooks(b)
	c := ctltest.Client(b, cluster.Config)
	cfg := rest.CopyConfig(cluster.Config)
	if ctlConfig != nil {
		ctlConfig(cfg)
	}
	ctl := start(b, cfg, append([]func(*controller.Options){func(o *controller.Options) {
		o.WebhookAddr, o.WebhookCertDir = cluster.Webhooks.Addr, cluster.Webhooks.CertDir
		o.Injector = webhook.Injector{XDSAddress: "legate-xds.legate-system.svc:18000"}
		o.PKI = &kubepki.Options{CASecret: "legate-ca", XDSSecret: "legate-xds-tls", XDSHosts: []string{"127.0.0.1"}}
	}}, change...)...)
	return cluster, c, ctl
}

// BenchmarkAdmission times, through a real API server that calls legate's
// webhooks over TLS (config/webhook), the creation of a Pod that asks for
// a sidecar (the API server calls the mutating webhook: decode, inject,
// the certificate check, the patch) beside, in the same iteration, a Pod
// that does not ask (the objectSelector skips the webhook: the baseline),
// and the creation of an EnvoyConfig (the validating webhook renders it
// with the policies in force). Each reports p50/p99; the webhook's own
// share is the difference between the two Pod creations.
func BenchmarkAdmission(b *testing.B) {
	_, c, _ := injectingHome(b, nil)
	ctx := context.Background()

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
// skips the webhook: the baseline), 30 Pods created with the sidecar
// already in (no webhook call: what storing the bigger Pod costs), 30 of
// those without the proxy label too (the controller ignores them: what
// the API server alone pays for the bigger Pod), then 30 Pods that ask
// for a sidecar, each for a node ID nobody has used yet (30 new
// workloads), then 30 that ask for one node ID already in use, with the
// controller running as it does in a cluster: its PKI on, so that every
// injected Pod's proxy certificate is issued by the proxy-certificates
// reconciler while the next Pods are admitted. Beside each client-side
// p50/p99 it reports the split of a Pod's creation: what the API server
// measured (webhook calls per Pod and their mean time, its admission
// chain, the create request, etcd's create), and legate's side (the
// handler's mean time, connections opened per Pod). Run it with
// -benchtime 1x; each iteration is one burst of each kind.
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
	cluster, c, ctl := injectingHome(b, qps, func(o *controller.Options) {
		o.HTTPAddr = "127.0.0.1:0" // its /metrics: legate's side of each call
	})
	ctx := context.Background()
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

	// A Pod as the webhook would leave it, created with its sidecar
	// already in and without the label the objectSelector matches: the
	// API server stores the same bigger Pod and the controller issues its
	// certificate, but no webhook is called. It splits "storing a bigger
	// Pod" from "calling the webhook".
	injector := webhook.Injector{XDSAddress: "legate-xds.legate-system.svc:18000"}
	preInjected := func(node string) *corev1.Pod {
		p := pod(node)
		_, ok, err := injector.Inject(p)
		require.NoError(b, err)
		require.True(b, ok)
		delete(p.Labels, webhook.InjectLabel)
		return p
	}
	phases := []struct {
		name string
		pod  func(i, j int) *corev1.Pod
	}{
		{"pod-plain", func(int, int) *corev1.Pod { return pod("") }},
		{"pod-preinjected-new-node", func(i, j int) *corev1.Pod { return preInjected(fmt.Sprintf("pre-%d-%d", i, j)) }},
		{"pod-preinjected-unwatched", func(i, j int) *corev1.Pod {
			p := preInjected(fmt.Sprintf("un-%d-%d", i, j))
			delete(p.Labels, webhook.ProxyLabel)
			return p
		}},
		{"pod-injected-new-node", func(i, j int) *corev1.Pod { return pod(fmt.Sprintf("web-%d-%d", i, j)) }},
		{"pod-injected-existing-node", func(int, int) *corev1.Pod { return pod("shared") }},
	}
	lat := make([][]time.Duration, len(phases))
	split := make([]admissionSplit, len(phases))
	b.ResetTimer()
	for i := range b.N {
		for k, ph := range phases {
			before := scrapeAPIServer(b, cluster.Config, admissionSeries...)
			legateBefore := scrapeController(b, ctl.HTTPAddr(), legateSeries...)
			for j := range burst {
				lat[k] = append(lat[k], timed(ph.pod(i, j)))
			}
			split[k].add(scrapeAPIServer(b, cluster.Config, admissionSeries...), before,
				scrapeController(b, ctl.HTTPAddr(), legateSeries...), legateBefore, burst)
		}
	}
	b.StopTimer()
	for k, ph := range phases {
		report(b, ph.name, lat[k])
		split[k].report(b, ph.name)
	}
}

// BenchmarkPodStatusUpdates counts what the API server serves on Secrets
// while the status of injected Pods changes, as the kubelet changes it
// while a Pod starts and whenever its readiness flips: per iteration,
// one status update of each of 100 Pods of one node whose certificate is
// issued. After the updates, a Pod of a new node is created, and the
// iteration ends once its Secret is issued: the reconciler works its
// queue in order, so the updates' reconciles are done by then. The
// marker's own two requests (a Get and the Create) and the benchmark's
// Gets while it waits are not counted.
func BenchmarkPodStatusUpdates(b *testing.B) {
	const pods = 100
	cluster, c, _ := injectingHome(b, nil)
	ctx := context.Background()
	pod := func(node string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				GenerateName: "web-", Namespace: "default",
				Labels:      map[string]string{webhook.InjectLabel: webhook.Enabled},
				Annotations: map[string]string{"legate.dev/node-id": node},
			},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
		}
	}
	polls := 0 // the benchmark's own Gets of Secrets
	issued := func(node string) {
		require.Eventually(b, func() bool {
			polls++
			return c.Get(ctx, client.ObjectKey{Namespace: "default", Name: pki.ProxySecretName(node)}, &corev1.Secret{}) == nil
		}, time.Minute, 10*time.Millisecond, "the certificate of node %s is issued", node)
	}
	var created []*corev1.Pod
	require.Eventually(b, func() bool { return c.Create(ctx, pod("web")) == nil }, time.Minute, 100*time.Millisecond)
	for range pods - 1 {
		p := pod("web")
		require.NoError(b, c.Create(ctx, p))
		created = append(created, p)
	}
	issued("web")
	marker := 0
	barrier := func() {
		marker++
		require.NoError(b, c.Create(ctx, pod(fmt.Sprintf("marker-%d", marker))))
		issued(fmt.Sprintf("marker-%d", marker))
	}
	barrier() // the creations' reconciles are done

	var requests float64
	b.ResetTimer()
	for i := range b.N {
		before, polled := scrapeAPIServer(b, cluster.Config, admissionSeries...), polls
		for _, p := range created {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue}[i%2]}}
			require.NoError(b, c.Status().Update(ctx, p))
		}
		barrier()
		after := scrapeAPIServer(b, cluster.Config, admissionSeries...)
		requests += after.sum(before, "apiserver_request_duration_seconds_count{", `resource="secrets"`) - 2 - float64(polls-polled)
	}
	b.StopTimer()
	b.ReportMetric(requests/float64(b.N*len(created)), "secret-requests/status-update")
}
