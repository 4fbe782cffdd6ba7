package kubepki

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/webhook"
)

// errForeign stands for the home's refusal of another namespace's node.
var errForeign = errors.New("node edge is configured by another namespace")

// onlyTeamA is a tenancy decision: node "edge" belongs to namespace team-a.
func onlyTeamA(_ context.Context, namespace, nodeID string) error {
	if nodeID == "edge" && namespace != "team-a" {
		return errForeign
	}
	return nil
}

// injectedPod is a Pod as the injector leaves it, for node.
func injectedPod(ns, name, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: name,
		Labels:      map[string]string{webhook.ProxyLabel: "injected"},
		Annotations: map[string]string{"legate.dev/node-id": node},
	}}
}

// The injected pods' reconciler issues a certificate only where the
// home's tenancy decision allows it, and says why on the Pod otherwise;
// pods it must not touch are left alone.
func TestProxyCertificates(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		watches bool
		secret  bool   // the proxy's Secret is written
		event   string // the event's reason, "" for none
	}{
		{name: "its namespace's node", pod: injectedPod("team-a", "p", "edge"), watches: true, secret: true},
		{name: "another namespace's node", pod: injectedPod("team-b", "p", "edge"), watches: true, event: EventProxyCertificateRefused},
		{name: "malformed annotations", pod: func() *corev1.Pod {
			p := injectedPod("team-a", "p", "edge")
			p.Annotations["legate.dev/no-such-setting"] = "x"
			return p
		}(), watches: true, event: EventProxyCertificateRefused},
		{name: "a namespace not watched", pod: injectedPod("team-a", "p", "edge")},
		{name: "not injected", pod: func() *corev1.Pod {
			p := injectedPod("team-a", "p", "edge")
			p.Labels = nil
			return p
		}(), watches: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := fake.NewClientBuilder().WithObjects(tc.pod).Build()
			rec := events.NewFakeRecorder(4)
			r := &ProxyCertificates{
				Issuer:   Issuer{Authority: &Authority{CA: testSigner(t).ca, Client: store, Clock: clocktesting.NewFakePassiveClock(t0), Log: logr.Discard()}, MayServe: onlyTeamA},
				Pods:     store,
				Watches:  func(string) bool { return tc.watches },
				Recorder: rec,
			}
			_, err := r.Reconcile(t.Context(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(tc.pod)})
			require.NoError(t, err)

			var s corev1.Secret
			err = store.Get(t.Context(), types.NamespacedName{Namespace: tc.pod.Namespace, Name: pki.ProxySecretName("edge")}, &s)
			if tc.secret {
				require.NoError(t, err)
				assert.Equal(t, "edge", s.Annotations[AnnotationNodeID])
			} else {
				assert.True(t, apierrors.IsNotFound(err), "no Secret: %v", err)
			}
			if tc.event == "" {
				assert.Empty(t, rec.Events)
				return
			}
			require.Len(t, rec.Events, 1)
			assert.Contains(t, <-rec.Events, tc.event)
		})
	}
}

// A Pod whose node has its certificate, not yet due, reads no Secret
// from the API server: the cache's metadata of the Secret says so. A due
// one is read, checked and renewed.
func TestAPodOfANodeWithItsCertificateReadsNoSecret(t *testing.T) {
	pod := injectedPod("team-a", "p", "edge")
	store := fake.NewClientBuilder().WithObjects(pod).Build()
	reads := 0
	counted := interceptor.NewClient(store, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*corev1.Secret); ok {
			reads++
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	clk := clocktesting.NewFakePassiveClock(t0)
	r := &ProxyCertificates{
		Issuer:   Issuer{Authority: &Authority{CA: testSigner(t).ca, Client: counted, Clock: clk, Validity: 30 * time.Hour, Log: logr.Discard()}, MayServe: onlyTeamA},
		Pods:     store,
		Recorder: events.NewFakeRecorder(4),
	}
	reconcileIt := func() {
		t.Helper()
		_, err := r.Reconcile(t.Context(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pod)})
		require.NoError(t, err)
	}
	key := types.NamespacedName{Namespace: "team-a", Name: pki.ProxySecretName("edge")}
	due := func() string {
		t.Helper()
		var s corev1.Secret
		require.NoError(t, store.Get(t.Context(), key, &s))
		return s.Annotations[AnnotationRenewAfter]
	}

	reconcileIt()
	require.Equal(t, 0, reads, "a new node: its Secret is created without a read")
	first := due()
	reconcileIt()
	assert.Equal(t, 0, reads, "its certificate is there and not due: nothing read")

	clk.SetTime(t0.Add(21 * time.Hour))
	reconcileIt()
	assert.Equal(t, 1, reads, "due: read and checked")
	assert.NotEqual(t, first, due(), "and renewed")
}

// A Secret the cache does not hold yet (it is behind the API server, or
// another replica wrote the Secret first) is created at once; the create
// finds it there, and it is then read and decided on as any other:
// legate's current certificate of the node is kept as it is, anything
// else is refused and left alone.
func TestASecretTheCacheMissedIsReadAndDecided(t *testing.T) {
	key := types.NamespacedName{Namespace: "team-a", Name: pki.ProxySecretName("edge")}
	ca := testSigner(t).ca
	clk := clocktesting.NewFakePassiveClock(t0)
	for _, tc := range []struct {
		name    string
		secret  func(t *testing.T, api client.Client) // writes the Secret the cache misses
		failure string                                // "" when the reconcile succeeds
	}{
		{name: "legate's certificate of the node", secret: func(t *testing.T, api client.Client) {
			a := &Authority{CA: ca, Client: api, Clock: clk, Log: logr.Discard()}
			require.NoError(t, a.EnsureProxy(t.Context(), key.Namespace, key.Name, "edge", false))
		}},
		{name: "legate's certificate of another node", secret: func(t *testing.T, api client.Client) {
			a := &Authority{CA: ca, Client: api, Clock: clk, Log: logr.Discard()}
			require.NoError(t, a.EnsureProxy(t.Context(), key.Namespace, key.Name, "core", false))
		}, failure: `holds the certificate of node ID "core", not of node ID "edge"`},
		{name: "a Secret legate did not issue", secret: func(t *testing.T, api client.Client) {
			require.NoError(t, api.Create(t.Context(), &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
				Type:       corev1.SecretTypeTLS, Data: map[string][]byte{"tls.key": []byte("theirs")},
			}))
		}, failure: "exists and was not issued by legate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := injectedPod("team-a", "p", "edge")
			api := fake.NewClientBuilder().WithObjects(pod).Build()
			tc.secret(t, api)
			var before corev1.Secret
			require.NoError(t, api.Get(t.Context(), key, &before))

			rec := events.NewFakeRecorder(4)
			r := &ProxyCertificates{
				Issuer:   Issuer{Authority: &Authority{CA: ca, Client: api, Clock: clk, Log: logr.Discard()}, MayServe: onlyTeamA},
				Pods:     fake.NewClientBuilder().WithObjects(pod).Build(), // a cache without the Secret
				Recorder: rec,
			}
			_, err := r.Reconcile(t.Context(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pod)})

			var after corev1.Secret
			require.NoError(t, api.Get(t.Context(), key, &after))
			assert.Equal(t, before.ResourceVersion, after.ResourceVersion, "the Secret is left as it was")
			assert.Equal(t, before.Data, after.Data)
			if tc.failure == "" {
				require.NoError(t, err)
				assert.Empty(t, rec.Events)
				return
			}
			require.ErrorContains(t, err, tc.failure)
			require.Len(t, rec.Events, 1)
			assert.Contains(t, <-rec.Events, tc.failure)
		})
	}
}

// A namespace that may not hold a node is refused even when it wrote a
// Secret that looks like the node's current certificate: the tenancy
// decision comes before the metadata check.
func TestAForgedCurrentSecretDoesNotSkipTheRefusal(t *testing.T) {
	pod := injectedPod("team-b", "p", "edge")
	forged := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Namespace: "team-b", Name: pki.ProxySecretName("edge"),
		Labels:      map[string]string{LabelCertificate: KindProxy},
		Annotations: map[string]string{AnnotationNodeID: "edge", AnnotationRenewAfter: t0.Add(time.Hour).Format(time.RFC3339)},
	}}
	store := fake.NewClientBuilder().WithObjects(pod, forged).Build()
	rec := events.NewFakeRecorder(4)
	r := &ProxyCertificates{
		Issuer:   Issuer{Authority: &Authority{CA: testSigner(t).ca, Client: store, Clock: clocktesting.NewFakePassiveClock(t0), Log: logr.Discard()}, MayServe: onlyTeamA},
		Pods:     store,
		Recorder: rec,
	}
	_, err := r.Reconcile(t.Context(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pod)})
	require.NoError(t, err)
	require.Len(t, rec.Events, 1)
	assert.Contains(t, <-rec.Events, EventProxyCertificateRefused)
}

// A Pod is reconciled when it is stored and when what names its proxy
// changes, not for each change of its status.
func TestProxyPodChanged(t *testing.T) {
	old := injectedPod("team-a", "p", "edge")
	statusOnly := old.DeepCopy()
	statusOnly.ResourceVersion, statusOnly.Status.Phase = "2", corev1.PodRunning
	relabelled := old.DeepCopy()
	relabelled.Labels["app"] = "shop"
	renamed := old.DeepCopy()
	renamed.Annotations["legate.dev/node-id"] = "other"
	for _, tc := range []struct {
		name string
		new  *corev1.Pod
		want bool
	}{
		{"its status changed", statusOnly, false},
		{"a label changed", relabelled, true},
		{"an annotation changed", renamed, true},
	} {
		assert.Equal(t, tc.want, proxyPodChanged.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: tc.new}), tc.name)
	}
	assert.True(t, proxyPodChanged.Create(event.CreateEvent{Object: old}), "a stored Pod")
	assert.False(t, proxyPodChanged.Delete(event.DeleteEvent{Object: old}), "a deleted Pod leaves its Secret to the others")
}

// A deleted proxy Secret brings back the Pods whose proxy holds its
// certificate there, in its namespace only; other Secrets bring nothing.
func TestPodsOfADeletedSecret(t *testing.T) {
	custom := injectedPod("team-a", "custom", "edge")
	custom.Annotations["legate.dev/client-certificate"] = "edge-custom"
	store := fake.NewClientBuilder().WithObjects(
		injectedPod("team-a", "p1", "edge"), injectedPod("team-a", "p2", "edge"),
		injectedPod("team-a", "q", "other"), injectedPod("team-b", "p1", "edge"), custom,
	).Build()
	r := &ProxyCertificates{Pods: store}
	secret := func(ns, name, kind string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{LabelCertificate: kind}}}
	}
	names := func(reqs []reconcile.Request) []string {
		var out []string
		for _, r := range reqs {
			out = append(out, r.String())
		}
		return out
	}

	deleted := secret("team-a", pki.ProxySecretName("edge"), KindProxy)
	assert.True(t, proxySecretDeleted.Delete(event.DeleteEvent{Object: deleted}))
	assert.ElementsMatch(t, []string{"team-a/p1", "team-a/p2"}, names(r.podsOfSecret(t.Context(), deleted)))
	assert.ElementsMatch(t, []string{"team-a/custom"}, names(r.podsOfSecret(t.Context(), secret("team-a", "edge-custom", KindProxy))))

	assert.False(t, proxySecretDeleted.Delete(event.DeleteEvent{Object: secret("team-a", pki.ProxySecretName("edge"), KindServer)}), "not a proxy's Secret")
	assert.False(t, proxySecretDeleted.Update(event.UpdateEvent{ObjectOld: deleted, ObjectNew: deleted}), "a Secret that changed is RenewDue's")
	assert.False(t, proxySecretDeleted.Create(event.CreateEvent{Object: deleted}))
}

// A dry run (admission) decides without writing; a refusal is the
// home's, whatever the dry run.
func TestIssuer(t *testing.T) {
	store := fake.NewClientBuilder().Build()
	i := Issuer{Authority: &Authority{CA: testSigner(t).ca, Client: store, Log: logr.Discard()}, MayServe: onlyTeamA}
	for _, dry := range []bool{true, false} {
		require.ErrorIs(t, i.EnsureProxy(t.Context(), "team-b", "cert", "edge", dry), errForeign)
	}
	require.NoError(t, i.EnsureProxy(t.Context(), "team-a", "cert", "edge", true))
	// names, not the Secrets: a failure must not print key material
	names := func() []string {
		var list corev1.SecretList
		require.NoError(t, store.List(t.Context(), &list))
		var out []string
		for _, s := range list.Items {
			out = append(out, s.Namespace+"/"+s.Name)
		}
		return out
	}
	assert.Empty(t, names(), "nothing written by a dry run or a refusal")
	require.NoError(t, i.EnsureProxy(t.Context(), "team-a", "cert", "edge", false))
	assert.Equal(t, []string{"team-a/cert"}, names())
}

// The CA goes into every webhook of legate's configurations, those not
// installed are skipped, and a configuration that holds it already is not
// written again.
func TestCABundle(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nlegate\n-----END CERTIFICATE-----\n")
	mutating := &admissionregv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: webhook.InjectorConfiguration},
		Webhooks:   []admissionregv1.MutatingWebhook{{Name: "a.legate.dev"}, {Name: "b.legate.dev", ClientConfig: admissionregv1.WebhookClientConfig{CABundle: []byte("old")}}},
	}
	store := fake.NewClientBuilder().WithObjects(mutating).Build()
	patches := 0
	b := CABundle{Client: interceptor.NewClient(store, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			patches++
			return c.Patch(ctx, obj, patch, opts...)
		},
	}), CA: ca, Log: logr.Discard()}
	require.NoError(t, b.write(t.Context()), "the validating configuration is not installed: skipped")

	var got admissionregv1.MutatingWebhookConfiguration
	require.NoError(t, store.Get(t.Context(), types.NamespacedName{Name: webhook.InjectorConfiguration}, &got))
	for _, w := range got.Webhooks {
		assert.Equal(t, ca, w.ClientConfig.CABundle, w.Name)
	}
	require.Equal(t, 1, patches)
	require.NoError(t, b.write(t.Context()))
	assert.Equal(t, 1, patches, "not written again")
}
