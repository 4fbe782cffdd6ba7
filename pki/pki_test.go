package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var now = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)

func newTestCA(t *testing.T) (*CA, Issued) {
	t.Helper()
	ca, iss, err := NewCA("legate test CA", DefaultCAValidity, now)
	require.NoError(t, err)
	return ca, iss
}

// verify checks c against the CA for usage at now.
func verify(t *testing.T, ca *CA, c *x509.Certificate, usage x509.ExtKeyUsage) error {
	t.Helper()
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(ca.CertPEM()))
	_, err := c.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

func TestCAIssuesServerAndNodeCertificates(t *testing.T) {
	ca, caIss := newTestCA(t)
	assert.True(t, caIss.Cert.IsCA)
	assert.Equal(t, now.Add(DefaultCAValidity), caIss.Cert.NotAfter)

	srv, err := ca.IssueServer([]string{"legate.example", "127.0.0.1", "::1"}, DefaultLeafValidity, now)
	require.NoError(t, err)
	assert.Equal(t, []string{"legate.example"}, srv.Cert.DNSNames)
	require.Len(t, srv.Cert.IPAddresses, 2)
	assert.True(t, srv.Cert.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)))
	require.NoError(t, verify(t, ca, srv.Cert, x509.ExtKeyUsageServerAuth))
	require.NoError(t, srv.Cert.VerifyHostname("127.0.0.1"))
	assert.Error(t, verify(t, ca, srv.Cert, x509.ExtKeyUsageClientAuth), "a server certificate is no client certificate")

	node, err := ca.IssueNode([]string{"edge", "edge-canary"}, DefaultLeafValidity, now)
	require.NoError(t, err)
	assert.Equal(t, "edge", node.Cert.Subject.CommonName)
	assert.Equal(t, []string{"edge", "edge-canary"}, node.Cert.DNSNames)
	assert.Equal(t, now.Add(DefaultLeafValidity), node.Cert.NotAfter)
	assert.True(t, node.Cert.NotBefore.Before(now), "backdated for clocks a little behind")
	require.NoError(t, verify(t, ca, node.Cert, x509.ExtKeyUsageClientAuth))
	assert.Error(t, verify(t, ca, node.Cert, x509.ExtKeyUsageServerAuth), "a proxy certificate cannot serve")

	_, err = tls.X509KeyPair(node.CertPEM, node.KeyPEM)
	require.NoError(t, err, "the PEM pair loads as a TLS key pair")
	assert.NotEqual(t, srv.Cert.SerialNumber, node.Cert.SerialNumber)
}

func TestLoadCARoundTrip(t *testing.T) {
	ca, iss := newTestCA(t)
	loaded, err := LoadCA(iss.CertPEM, iss.KeyPEM)
	require.NoError(t, err)
	node, err := loaded.IssueNode([]string{"edge"}, time.Hour, now)
	require.NoError(t, err)
	require.NoError(t, verify(t, ca, node.Cert, x509.ExtKeyUsageClientAuth), "the loaded CA signs as the original")

	_, other := newTestCA(t)
	leaf, err := ca.IssueNode([]string{"edge"}, time.Hour, now)
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		cert, key []byte
		want      string
	}{
		"key of another CA":  {iss.CertPEM, other.KeyPEM, "does not belong to certificate"},
		"leaf as CA":         {leaf.CertPEM, leaf.KeyPEM, "is not a CA"},
		"not PEM":            {[]byte("hello"), iss.KeyPEM, "not a PEM CERTIFICATE"},
		"key is not PEM":     {iss.CertPEM, []byte("hello"), "the CA key is not PEM"},
		"key is certificate": {iss.CertPEM, iss.CertPEM, "not a PKCS #8 private key"},
	} {
		_, err := LoadCA(tc.cert, tc.key)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), tc.want, name)
		assert.NotContains(t, err.Error(), "PRIVATE KEY", "%s: no key material in errors", name)
	}
}

func TestIssueErrors(t *testing.T) {
	ca, _ := newTestCA(t)
	for name, tc := range map[string]struct {
		issue func() error
		want  string
	}{
		"no node":         {func() error { _, err := ca.IssueNode(nil, time.Hour, now); return err }, "at least one node ID"},
		"space in a node": {func() error { _, err := ca.IssueNode([]string{"edge 1"}, time.Hour, now); return err }, `node ID "edge 1": must be printable ASCII`},
		"no host":         {func() error { _, err := ca.IssueServer(nil, time.Hour, now); return err }, "at least one host"},
		"zero validity":   {func() error { _, err := ca.IssueNode([]string{"edge"}, 0, now); return err }, "validity must be positive"},
		"outlives the CA": {func() error { _, err := ca.IssueNode([]string{"edge"}, 2*DefaultCAValidity, now); return err }, "would outlive its CA"},
	} {
		err := tc.issue()
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), tc.want, name)
	}
	_, _, err := NewCA("", time.Hour, now)
	assert.ErrorContains(t, err, "needs a name")
}

func TestLongNodeIDHasNoCommonName(t *testing.T) {
	ca, _ := newTestCA(t)
	id := "sidecar~10.0.0.1~" + strings.Repeat("p", 60) + ".prod~prod.svc.cluster.local"
	node, err := ca.IssueNode([]string{id}, time.Hour, now)
	require.NoError(t, err)
	assert.Empty(t, node.Cert.Subject.CommonName, "a common name holds at most 64 characters")
	assert.Equal(t, []string{id}, node.Cert.DNSNames)
	assert.Contains(t, Describe(node.Cert), id)
}

// A CA made elsewhere (cert-manager writes PKCS #1 RSA and SEC 1 EC keys
// by default) loads and signs.
func TestLoadCAKeyEncodings(t *testing.T) {
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "elsewhere"},
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(DefaultCAValidity),
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ecDER, err := x509.MarshalECPrivateKey(ecKey)
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		key    crypto.Signer
		keyPEM *pem.Block
	}{
		"PKCS #1 RSA": {rsaKey, &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)}},
		"SEC 1 EC":    {ecKey, &pem.Block{Type: "EC PRIVATE KEY", Bytes: ecDER}},
	} {
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, tc.key.Public(), tc.key)
		require.NoError(t, err, name)
		certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		ca, err := LoadCA(certPEM, pem.EncodeToMemory(tc.keyPEM))
		require.NoError(t, err, name)
		node, err := ca.IssueNode([]string{"edge"}, time.Hour, now)
		require.NoError(t, err, name)
		assert.NoError(t, verify(t, ca, node.Cert, x509.ExtKeyUsageClientAuth), name)

		_, err = LoadCA(certPEM, pem.EncodeToMemory(&pem.Block{Type: tc.keyPEM.Type, Bytes: []byte("garbled")}))
		assert.ErrorContains(t, err, "the CA key is not", name)
	}
}

// A proxy certificate issued for a namespace records it, and only that
// certificate: one issued without a namespace records none.
func TestIssueNodeInRecordsTheNamespace(t *testing.T) {
	ca, _ := newTestCA(t)
	in, err := ca.IssueNodeIn("shop", []string{"edge"}, time.Hour, now)
	require.NoError(t, err)
	assert.Equal(t, "shop", NamespaceOf(in.Cert))
	assert.Equal(t, []string{"edge"}, in.Cert.DNSNames)
	plain, err := ca.IssueNode([]string{"edge"}, time.Hour, now)
	require.NoError(t, err)
	assert.Empty(t, NamespaceOf(plain.Cert))
	_, err = ca.IssueNodeIn("two words", []string{"edge"}, time.Hour, now)
	require.Error(t, err)
}
