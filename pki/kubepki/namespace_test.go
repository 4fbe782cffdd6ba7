package kubepki

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/legate-dev/legate/pki"
)

// A proxy certificate records the namespace of the Secret it is issued
// into, when it is first issued, when an admission renews it and when
// the renewal loop does: the xDS authorizer refuses it for a node another
// namespace configures by that record (pki.NamespaceOf). One node's
// certificates in two namespaces record each their own.
func TestProxyCertificateRecordsItsNamespace(t *testing.T) {
	ctx := context.Background()
	r := newRenewal(t, shopCert, teamBCert)
	namespaceOf := func(key types.NamespacedName, issued time.Time) string {
		t.Helper()
		var s corev1.Secret
		require.NoError(t, r.store.Get(ctx, key, &s))
		pair, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
		require.NoError(t, err)
		require.Equal(t, []string{"edge"}, pair.Leaf.DNSNames)
		require.Equal(t, issued.Add(-pki.Backdate), pair.Leaf.NotBefore, "issued then")
		return pki.NamespaceOf(pair.Leaf)
	}
	for _, key := range []types.NamespacedName{shopCert, teamBCert} {
		assert.Equal(t, key.Namespace, namespaceOf(key, t0), "issued")
	}

	// Due (two thirds of 30 h): renewed at admission in one namespace...
	require.NoError(t, r.a.EnsureProxy(ctx, "shop", "edge-cert", "edge", false))
	assert.Equal(t, "shop", namespaceOf(shopCert, r.clk.Now()), "renewed at admission")

	// ... and by the renewal loop in the other.
	_, renewed, err := r.a.RenewDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, renewed)
	assert.Equal(t, "team-b", namespaceOf(teamBCert, r.clk.Now()), "renewed by RenewDue")
}
