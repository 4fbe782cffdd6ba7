package controller_test

import (
	"context"
	"testing"
	"time"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/ctltest"
	"github.com/legate-dev/legate/test/internal/testpki"
)

// withTLSSecret is the full sample (its last resource is the TLS secret
// edge-cert) and that Secret, with a certificate issued for name.
func withTLSSecret(t *testing.T, ca *testpki.CA, name string) (*v1alpha1.EnvoyConfig, *corev1.Secret) {
	t.Helper()
	ec := sampleFull(t)
	kp := ca.Issue(t, testpki.Identity{CommonName: name, DNSNames: []string{name}})
	return ec, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "edge-cert", Namespace: "default"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: kp.CertPEM, corev1.TLSPrivateKeyKey: kp.KeyPEM},
	}
}

// newSDSStream is a plaintext raw ADS stream of node edge subscribed to
// its secret edge-cert.
func newSDSStream(t *testing.T, addr string) *adsStream {
	t.Helper()
	return newADSStream(t, addr, insecure.NewCredentials(), "edge", resourcev3.SecretType, "edge-cert")
}

// certOf is the certificate chain of the one secret resp carries.
func certOf(t *testing.T, resp *discoveryv3.DiscoveryResponse) []byte {
	t.Helper()
	require.Len(t, resp.Resources, 1)
	var sec tlsv3.Secret
	require.NoError(t, resp.Resources[0].UnmarshalTo(&sec))
	return sec.GetTlsCertificate().GetCertificateChain().GetInlineBytes()
}

// A TLS Secret referenced by an EnvoyConfig is served over SDS, and a new
// certificate in it reaches the connected proxy with no restart and no new
// revision.
func TestSecretRotationReachesTheProxy(t *testing.T) {
	t.Parallel()
	cluster := envtest.Start(t)
	c := ctltest.Client(t, cluster.Config)
	ctl := startWith(t, cluster.Config, func(o *controller.Options) { o.XDSInsecureSecrets = []string{"*"} })
	ctx := context.Background()
	ca := testpki.NewCA(t, "test-ca")
	ec, secret := withTLSSecret(t, ca, "one.example")
	require.NoError(t, c.Create(ctx, secret))
	require.NoError(t, c.Create(ctx, ec))
	require.Eventually(t, func() bool {
		got := get(t, c, ec)
		return got.Status.CacheState != nil && *got.Status.CacheState == v1alpha1.CacheInSync
	}, 60*time.Second, 50*time.Millisecond)
	published := *get(t, c, ec).Status.PublishedVersion

	proxy := newSDSStream(t, ctl.XDSAddr())
	assert.Equal(t, string(secret.Data[corev1.TLSCertKey]), string(certOf(t, proxy.next(t))), "the Secret's certificate is served")

	_, rotated := withTLSSecret(t, ca, "two.example")
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(secret), secret))
	secret.Data = rotated.Data
	require.NoError(t, c.Update(ctx, secret))
	assert.Equal(t, string(rotated.Data[corev1.TLSCertKey]), string(certOf(t, proxy.next(t))), "the new certificate is pushed")
	assert.Equal(t, published, *get(t, c, ec).Status.PublishedVersion, "no new revision: only the secret set changed")
}

// Over plaintext xDS (the controller has no mutual TLS yet) a TLS key is
// not served unless allowed: the EnvoyConfig waits and says how to allow
// it.
func TestKeyMaterialStaysOffPlaintextXDS(t *testing.T) {
	t.Parallel()
	c, _ := run(t)
	ctx := context.Background()
	ec, secret := withTLSSecret(t, testpki.NewCA(t, "test-ca"), "one.example")
	require.NoError(t, c.Create(ctx, secret))
	require.NoError(t, c.Create(ctx, ec))
	var ready *metav1.Condition
	require.Eventually(t, func() bool {
		ready = meta.FindStatusCondition(get(t, c, ec).Status.Conditions, v1alpha1.ConditionReady)
		return ready != nil && ready.Reason == "DependencyNotReady"
	}, 60*time.Second, 50*time.Millisecond, "the revision waits for key material it may serve")
	assert.Contains(t, ready.Message, "--xds-insecure-secrets edge-cert")
	assert.Nil(t, get(t, c, ec).Status.PublishedVersion, "nothing is served")
}
