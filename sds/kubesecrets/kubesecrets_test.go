package kubesecrets_test

import (
	"context"
	"testing"
	"time"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/sds/kubesecrets"
	"github.com/legate-dev/legate/test/envtest"
)

func decode(t *testing.T, r render.Resource) *tlsv3.Secret {
	t.Helper()
	var s tlsv3.Secret
	require.NoError(t, proto.Unmarshal(r.Body, &s))
	return &s
}

// Secrets of a real API server are read by kind, a missing one is waited
// for (NotReady) and read once created, and no key material reaches an
// error.
func TestResolveFromSecrets(t *testing.T) {
	c := envtest.Start(t).Client
	ctx := context.Background()
	_, issued, err := pki.NewCA("edge.example", 24*time.Hour, time.Now())
	require.NoError(t, err)
	pos := render.Position{File: "edge.yaml", Line: 3}
	r := kubesecrets.Resolver{Client: c, Namespace: "default"}

	tlsExt := render.ExternalSecret{Name: "edge", Ref: "edge-cert", Kind: "tls", Source: pos}
	_, err = r.Resolve(tlsExt)
	require.ErrorIs(t, err, revisions.ErrNotReady)
	assert.ErrorContains(t, err, "Secret default/edge-cert does not exist")
	assert.ErrorContains(t, err, "edge.yaml:3")

	require.NoError(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "edge-cert", Namespace: "default"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": issued.CertPEM, "tls.key": issued.KeyPEM},
	}))
	res, err := r.Resolve(tlsExt)
	require.NoError(t, err)
	got := decode(t, res)
	assert.Equal(t, "edge", got.GetName())
	assert.Equal(t, issued.CertPEM, got.GetTlsCertificate().GetCertificateChain().GetInlineBytes())
	assert.Equal(t, issued.KeyPEM, got.GetTlsCertificate().GetPrivateKey().GetInlineBytes())

	// A validation context from tls.crt when there is no ca.crt, by a
	// namespaced ref.
	res, err = r.Resolve(render.ExternalSecret{Name: "peer", Ref: "default/edge-cert", Kind: "validation"})
	require.NoError(t, err)
	assert.Equal(t, issued.CertPEM, decode(t, res).GetValidationContext().GetTrustedCa().GetInlineBytes())

	require.NoError(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "tokens", Namespace: "default"},
		Data:       map[string][]byte{"hmac": []byte("hmac-value-123"), "empty": {}},
	}))
	res, err = r.Resolve(render.ExternalSecret{Name: "hmac", Ref: "tokens", Key: "hmac", Kind: "opaque"})
	require.NoError(t, err)
	assert.Equal(t, []byte("hmac-value-123"), decode(t, res).GetGenericSecret().GetSecret().GetInlineBytes())

	_, err = r.Resolve(render.ExternalSecret{Name: "x", Ref: "tokens", Key: "absent", Kind: "opaque"})
	require.ErrorIs(t, err, revisions.ErrNotReady)
	assert.ErrorContains(t, err, "no key absent in Secret default/tokens")
	_, err = r.Resolve(render.ExternalSecret{Name: "x", Ref: "tokens", Key: "empty", Kind: "opaque"})
	assert.ErrorContains(t, err, "key empty of Secret default/tokens is empty")
	_, err = r.Resolve(render.ExternalSecret{Name: "x", Ref: "tokens", Kind: "tls"})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hmac-value-123", "no key material in errors")

	_, err = r.Resolve(render.ExternalSecret{Name: "x", Ref: "a/b/c", Kind: "tls"})
	require.Error(t, err)
	assert.NotErrorIs(t, err, revisions.ErrNotReady, "a malformed ref is a fault of the configuration")
	_, err = r.Resolve(render.ExternalSecret{Name: "x", Ref: "tokens", Kind: "weird"})
	assert.ErrorContains(t, err, `kind "weird"`)
}
