package testpki

import (
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIssuedCertificateVerifiesAgainstItsCAOnly(t *testing.T) {
	ca := NewCA(t, "test CA")
	kp := ca.Issue(t, Identity{
		CommonName: "proxy",
		DNSNames:   []string{"edge"},
		IPs:        []net.IP{net.IPv4(127, 0, 0, 1)},
		URIs:       []string{"spiffe://legate.test/edge"},
	})
	leaf, err := x509.ParseCertificate(kp.TLSCertificate(t).Certificate[0])
	require.NoError(t, err)
	assert.Equal(t, "proxy", leaf.Subject.CommonName)
	assert.Equal(t, []string{"edge"}, leaf.DNSNames)
	require.Len(t, leaf.URIs, 1)
	assert.Equal(t, "spiffe://legate.test/edge", leaf.URIs[0].String())

	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		_, err = leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{usage}})
		require.NoError(t, err, "usage %v", usage)
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "127.0.0.1"})
	require.NoError(t, err, "valid for its IP address")

	other := NewCA(t, "other CA")
	_, err = leaf.Verify(x509.VerifyOptions{Roots: other.Pool()})
	require.Error(t, err, "another CA does not vouch for it")
}

func TestWrite(t *testing.T) {
	ca := NewCA(t, "test CA")
	kp := ca.Issue(t, Identity{CommonName: "c"})
	dir := filepath.Join(t.TempDir(), "client")
	certFile, keyFile := kp.Write(t, dir)
	assert.Equal(t, dir, filepath.Dir(certFile))
	assert.Equal(t, dir, filepath.Dir(keyFile))
	got, err := os.ReadFile(certFile)
	require.NoError(t, err)
	assert.Equal(t, kp.CertPEM, got)
	got, err = os.ReadFile(keyFile)
	require.NoError(t, err)
	assert.Equal(t, kp.KeyPEM, got)

	caFile := ca.Write(t, filepath.Join(t.TempDir(), "ca.crt"))
	got, err = os.ReadFile(caFile)
	require.NoError(t, err)
	assert.Equal(t, ca.CertPEM, got)
}
