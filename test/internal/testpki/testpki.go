// Package testpki issues the throwaway certificates of legate's TLS tests:
// a certificate authority made on the spot and leaf certificates it signs,
// with the names (IP and DNS names, URIs, common name) a test needs, as PEM
// files in a test's temporary directory.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// validity is how long every certificate is valid, starting an hour in the
// past so that a clock a little behind still accepts it.
const validity = 24 * time.Hour

// CA is a certificate authority that signs leaf certificates.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// CertPEM is the CA certificate in PEM.
	CertPEM []byte
}

// Identity is what a leaf certificate names.
type Identity struct {
	CommonName string
	DNSNames   []string
	IPs        []net.IP
	URIs       []string
}

// KeyPair is a leaf certificate and its private key in PEM.
type KeyPair struct {
	CertPEM, KeyPEM []byte
}

// NewCA makes a certificate authority whose subject common name is name.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := template(t, pkix.Name{CommonName: name})
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &CA{cert: cert, key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Pool is a certificate pool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// Issue signs a leaf certificate for id, usable by a TLS server and a TLS
// client alike.
func (ca *CA) Issue(t testing.TB, id Identity) KeyPair {
	t.Helper()
	key := newKey(t)
	tmpl := template(t, pkix.Name{CommonName: id.CommonName})
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	tmpl.DNSNames, tmpl.IPAddresses = id.DNSNames, id.IPs
	for _, s := range id.URIs {
		u, err := url.Parse(s)
		require.NoError(t, err)
		tmpl.URIs = append(tmpl.URIs, u)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return KeyPair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
}

// TLSCertificate is the key pair as a crypto/tls certificate.
func (k KeyPair) TLSCertificate(t testing.TB) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(k.CertPEM, k.KeyPEM)
	require.NoError(t, err)
	return c
}

// Write stores the key pair as dir/tls.crt and dir/tls.key, creating dir,
// and returns the two paths. Both files are in one directory, as grpc-go's
// file watcher requires.
func (k KeyPair) Write(t testing.TB, dir string) (certFile, keyFile string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o700))
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(certFile, k.CertPEM, 0o600))
	require.NoError(t, os.WriteFile(keyFile, k.KeyPEM, 0o600))
	return certFile, keyFile
}

// Write stores the CA certificate as path and returns path.
func (ca *CA) Write(t testing.TB, path string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(path, ca.CertPEM, 0o600))
	return path
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return key
}

func template(t testing.TB, subject pkix.Name) *x509.Certificate {
	t.Helper()
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	require.NoError(t, err)
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
	}
}
