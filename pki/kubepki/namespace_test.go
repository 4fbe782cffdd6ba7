package kubepki

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/legate-dev/legate/pki"
)

// A proxy certificate records the namespace of the Secret it is issued
// into, when it is first issued, when an admission renews it and when
// the renewal loop does: the xDS authorizer refuses it for a node another
// namespace configures by that record (pki.NamespaceOf). One node's
// certificates in two namespaces record each their own.
func TestProxyCertificateRecordsItsNamespace(t *testing.T) {
	ctx := context.Background()
	ca := testSigner(t)
	clk := clocktesting.NewFakePassiveClock(t0)
	c := fake.NewClientBuilder().Build()
	a := &Authority{CA: ca.ca, Client: c, Now: clk.Now, Validity: 30 * time.Hour, Log: logr.Discard()}
	namespaceOf := func(ns string) string {
		t.Helper()
		var s corev1.Secret
		require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "edge-cert"}, &s))
		pair, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
		require.NoError(t, err)
		require.Equal(t, []string{"edge"}, pair.Leaf.DNSNames)
		require.Equal(t, clk.Now().Add(-pki.Backdate), pair.Leaf.NotBefore, "issued now")
		return pki.NamespaceOf(pair.Leaf)
	}

	for _, ns := range []string{"shop", "team-b"} {
		require.NoError(t, a.EnsureProxy(ctx, ns, "edge-cert", "edge", false))
		assert.Equal(t, ns, namespaceOf(ns), "issued")
	}

	// Due (two thirds of 30 h): renewed at admission in one namespace...
	clk.SetTime(t0.Add(20 * time.Hour))
	require.NoError(t, a.EnsureProxy(ctx, "shop", "edge-cert", "edge", false))
	assert.Equal(t, "shop", namespaceOf("shop"), "renewed at admission")

	// ... and by the renewal loop in the other.
	_, renewed, err := a.RenewDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, renewed)
	assert.Equal(t, "team-b", namespaceOf("team-b"), "renewed by RenewDue")
}
