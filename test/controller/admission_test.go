package controller_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/ctltest"
	"github.com/legate-dev/legate/webhook"
)

// admitted starts an API server that calls legate's webhooks
// (config/webhook) and a controller serving them, with change applied to
// its options.
func admitted(t *testing.T, change func(*controller.Options)) (client.Client, *envtest.Cluster, *controller.Controller) {
	t.Helper()
	cluster := envtest.StartWithWebhooks(t)
	c := ctltest.Client(t, cluster.Config)
	ctl := startWith(t, cluster.Config, func(o *controller.Options) {
		o.WebhookAddr, o.WebhookCertDir = cluster.Webhooks.Addr, cluster.Webhooks.CertDir
		o.Injector = webhook.Injector{XDSAddress: "legate-xds.legate-system.svc:18000"}
		if change != nil {
			change(o)
		}
	})
	return c, cluster, ctl
}

// refusal is the API server's error for obj, which the test expects to be
// refused by legate's webhook.
func refusal(t *testing.T, err error) string {
	t.Helper()
	require.Error(t, err, "the API server refuses the object")
	require.Contains(t, err.Error(), "admission webhook", "the refusal comes from a webhook")
	return err.Error()
}

// A broken EnvoyConfig fails at kubectl apply with the renderer's field
// path and rule, a server-side dry run gives the same verdict and stores
// nothing, and a good one is admitted.
func TestBrokenEnvoyConfigIsRefusedAtApply(t *testing.T) {
	t.Parallel()
	c, _, _ := admitted(t, nil)
	ctx := context.Background()

	broken := sample(t)
	broken.Name = "broken"
	broken.Spec.NodeID = "broken"
	broken.Spec.Resources[0].Value.Raw = []byte(`{"name":"backend","type":"STRICT_DNS","connect_timeout":"-1s"}`)
	msg := refusal(t, c.Create(ctx, broken.DeepCopy()))
	assert.Contains(t, msg, "EnvoyConfig default/broken is refused by validation")
	assert.Contains(t, msg, "EnvoyConfig default/broken spec.resources[0].value.connect_timeout:", "the refusal names the object and the field path in it")
	assert.NotContains(t, msg, "broken.yaml", "no line of a document the author never saw")
	assert.Contains(t, msg, "connect_timeout", "the refusal names the field")

	dry := refusal(t, c.Create(ctx, broken.DeepCopy(), client.DryRunAll))
	assert.Equal(t, msg, dry, "a server-side dry run gives the same verdict")
	err := c.Get(ctx, client.ObjectKeyFromObject(broken), &v1alpha1.EnvoyConfig{})
	assert.True(t, apierrors.IsNotFound(err), "nothing refused is stored: %v", err)

	good := sample(t)
	require.NoError(t, c.Create(ctx, good), "a valid EnvoyConfig is admitted")

	// An edit that breaks it is refused; the stored spec stays.
	edit := get(t, c, good)
	edit.Spec.Resources[0].Value.Raw = []byte(`{"name":"backend","type":"STRICT_DNS","connect_timeout":"-1s"}`)
	refusal(t, c.Update(ctx, edit))
	assert.Contains(t, string(get(t, c, good).Spec.Resources[0].Value.Raw), `"2s"`)
}

// The cluster's CUE policies are judged at admission: once a policy is in
// force, an EnvoyConfig that breaks it is refused naming the policy, while
// an object already stored that breaks it can still be relabelled (and so
// deleted through finalizers).
func TestPoliciesAreJudgedAtAdmission(t *testing.T) {
	t.Parallel()
	c, _, _ := admitted(t, nil)
	ctx := context.Background()
	stored := sample(t) // connect_timeout: 2s
	require.NoError(t, c.Create(ctx, stored))

	require.NoError(t, c.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "rules", Namespace: "legate-system", Labels: map[string]string{controller.PolicyLabel: "true"}},
		Data:       map[string]string{"timeouts.cue": "cluster: connect_timeout: <=1\n"},
	}))
	other := sample(t)
	other.Name, other.Spec.NodeID = "other", "other"
	var msg string
	require.Eventually(t, func() bool {
		err := c.Create(ctx, other.DeepCopy())
		if err == nil {
			require.NoError(t, c.Delete(ctx, other.DeepCopy()))
			return false
		}
		msg = err.Error()
		return strings.Contains(msg, "breaks policy")
	}, 30*time.Second, 100*time.Millisecond, "the policy in force refuses the object")
	assert.Contains(t, msg, "configmap/legate-system/rules/timeouts.cue:1:27")

	relabel := get(t, c, stored)
	base := relabel.DeepCopy()
	relabel.Labels = map[string]string{"team": "edge"}
	require.NoError(t, c.Patch(ctx, relabel, client.MergeFrom(base)), "an update that leaves the spec alone is not judged again")
	assert.Equal(t, "edge", get(t, c, stored).Labels["team"])
}

// An EnvoySource whose spec cannot be followed is refused at apply with
// the field named.
func TestBrokenEnvoySourceIsRefusedAtApply(t *testing.T) {
	t.Parallel()
	c, _, _ := admitted(t, nil)
	ctx := context.Background()
	es := &v1alpha1.EnvoySource{
		ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "default"},
		Spec: v1alpha1.EnvoySourceSpec{SourceRef: &v1alpha1.FluxSourceRef{
			Kind: "GitRepository", Name: "config", Namespace: "flux-system",
		}},
	}
	msg := refusal(t, c.Create(ctx, es))
	assert.Contains(t, msg, "spec.sourceRef.namespace")

	es.Spec.SourceRef.Namespace = ""
	require.NoError(t, c.Create(ctx, es), "a source of its own namespace is admitted")
}

// A body that is not an AdmissionReview gets a 400 with the reason, never
// a crash; the webhook keeps answering afterwards.
func TestMalformedAdmissionReviewGetsBadRequest(t *testing.T) {
	t.Parallel()
	_, cluster, _ := admitted(t, nil)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(cluster.Webhooks.CAPEM))
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	for name, body := range map[string]string{
		"not JSON":         `{"apiVersion":`,
		"no request":       `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`,
		"no uid":           `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"kind":{"kind":"Pod"}}}`,
		"another version":  `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"1"}}`,
		"two reviews":      `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1"}}{}`,
		"wrong field type": `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":1}}`,
	} {
		for _, path := range []string{webhook.MutatePodsPath, webhook.ValidateEnvoyConfigsPath, webhook.ValidateEnvoySourcesPath} {
			resp, err := hc.Post("https://"+cluster.Webhooks.Addr+path, "application/json", bytes.NewBufferString(body))
			require.NoError(t, err, "%s to %s", name, path)
			_ = resp.Body.Close()
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s to %s", name, path)
		}
	}
	// The webhook survived: the API server's next call is answered (a
	// Pod asking for a sidecar gets it).
	pod := injectedPod("default", "web")
	require.NoError(t, cluster.Client.Create(context.Background(), pod))
	assert.NotEmpty(t, pod.Spec.InitContainers, "the webhook still injects")
}
