package kubetenancy_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/tenancy"
	"github.com/legate-dev/legate/tenancy/kubetenancy"
)

// indexer registers the indexes IndexNodes asks for with a fake client.
type indexer struct{ b *fake.ClientBuilder }

func (i indexer) IndexField(_ context.Context, obj client.Object, field string, fn client.IndexerFunc) error {
	i.b.WithIndex(obj, field, fn)
	return nil
}

// Who may get a certificate for a node: its owner's namespace, the
// namespaces the platform shares its nodes with, and, for a node nobody
// owns yet, any namespace no other namespace's object claims it for. Each
// case plays the other tenant.
func TestMayServe(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	b := fake.NewClientBuilder().WithScheme(scheme)
	require.NoError(t, kubetenancy.IndexNodes(t.Context(), indexer{b}))
	cache := b.WithObjects(
		// not rendered yet: no owner in the pipeline, yet a claim
		&v1alpha1.EnvoyConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "pending"}, Spec: v1alpha1.EnvoyConfigSpec{NodeID: "pending"}},
		&v1alpha1.EnvoySource{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "repo"}, Status: v1alpha1.EnvoySourceStatus{Nodes: []string{"from-git"}}},
		&v1alpha1.EnvoyConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: "legate-system", Name: "gateway", Annotations: map[string]string{tenancy.SharedAnnotation: "team-b"}},
			Spec:       v1alpha1.EnvoyConfigSpec{NodeID: "gateway"},
		},
	).Build()
	owners := map[string]string{"edge": "envoyconfig/team-a/edge", "gateway": "envoyconfig/legate-system/gateway"}
	c := &kubetenancy.Checker{
		Rule: tenancy.Rule{Home: "legate-system"}, Cache: cache,
		Owner: func(node string) string { return owners[node] },
	}
	for _, tc := range []struct {
		namespace, node string
		refused         bool
	}{
		{"team-a", "edge", false},
		{"team-b", "edge", true},
		{"team-b", "gateway", false},
		{"team-c", "gateway", true},
		{"legate-system", "gateway", false},
		{"team-a", "pending", false},
		{"team-b", "pending", true},
		{"team-b", "from-git", true},
		{"team-a", "from-git", false},
		{"team-b", "free", false},
	} {
		err := c.MayServe(t.Context(), tc.namespace, tc.node)
		if !tc.refused {
			assert.NoError(t, err, "%s may be served %s", tc.namespace, tc.node)
			continue
		}
		if assert.Error(t, err, "%s may not be served %s", tc.namespace, tc.node) {
			assert.Equal(t, tenancy.ErrOtherNamespace(tc.node).Error(), err.Error(), "names nothing of the other namespace")
		}
	}
}

// A stream's tenant is the namespace its legate-issued certificate names;
// the operator's own certificates and plaintext streams name none, and
// count as the owner's.
func TestProxyTenant(t *testing.T) {
	now := time.Now()
	ca, _, err := pki.NewCA("legate", 2*time.Hour, now)
	require.NoError(t, err)
	withCert := func(c *x509.Certificate) context.Context {
		return peer.NewContext(context.Background(), &peer.Peer{AuthInfo: credentials.TLSInfo{State: tls.ConnectionState{
			PeerCertificates: []*x509.Certificate{c}, VerifiedChains: [][]*x509.Certificate{{c}},
		}}})
	}
	tenants, err := ca.IssueNodeIn("team-a", []string{"gw"}, time.Hour, now)
	require.NoError(t, err)
	operators, err := ca.IssueNode([]string{"gw"}, time.Hour, now)
	require.NoError(t, err)

	assert.Equal(t, "team-a", kubetenancy.ProxyTenant(withCert(tenants.Cert)))
	assert.Empty(t, kubetenancy.ProxyTenant(withCert(operators.Cert)))
	assert.Empty(t, kubetenancy.ProxyTenant(peer.NewContext(context.Background(), &peer.Peer{})))
	assert.Empty(t, kubetenancy.ProxyTenant(context.Background()))
}
