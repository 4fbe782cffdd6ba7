package standalone

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/serveconfig"
)

// selfSigned returns a fresh self-signed certificate and its key, in PEM.
func selfSigned(t *testing.T, cn string) (crt, key []byte) {
	t.Helper()
	c := issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: cn}, DNSNames: []string{cn}}, nil)
	return c.certPEM, c.keyPEM
}

// testCert is a certificate made for a test, with its key, in PEM too.
type testCert struct {
	cert            *x509.Certificate
	key             *ecdsa.PrivateKey
	certPEM, keyPEM []byte
}

// issue signs tmpl with parent, or self-signs it when parent is nil. The
// serial number, key and validity are filled in.
func issue(t *testing.T, tmpl *x509.Certificate, parent *testCert) testCert {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl.SerialNumber, err = rand.Int(rand.Reader, big.NewInt(1<<62))
	require.NoError(t, err)
	tmpl.NotBefore = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tmpl.NotAfter = time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC)
	signer, signerKey := tmpl, priv
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &priv.PublicKey, signerKey)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	kder, err := x509.MarshalPKCS8PrivateKey(priv)
	require.NoError(t, err)
	return testCert{
		cert: cert, key: priv,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
	}
}

// writeSecret writes files into <dir>/<ref>/.
func writeSecret(t *testing.T, dir, ref string, files map[string][]byte) {
	t.Helper()
	d := filepath.Join(dir, filepath.FromSlash(ref))
	require.NoError(t, os.MkdirAll(d, 0o700))
	for name, data := range files {
		require.NoError(t, os.WriteFile(filepath.Join(d, name), data, 0o600))
	}
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestSecretsConfigChecks(t *testing.T) {
	cfg := serveconfig.Config{Sources: []serveconfig.SourceConfig{{Name: "a", Git: &serveconfig.GitSource{URL: "/srv/cfg"}}}, SecretsInterval: serveconfig.Duration{Duration: -time.Second}}
	assert.ErrorContains(t, cfg.Validate(), "secretsInterval: must not be negative")

	cfg.SecretsInterval = serveconfig.Duration{}
	cfg.XDSAddr, cfg.HTTPAddr, cfg.StateDir = "127.0.0.1:0", "127.0.0.1:0", t.TempDir()
	cfg.SecretsDir = filepath.Join(t.TempDir(), "absent")
	_, err := New(cfg, Options{})
	assert.ErrorContains(t, err, "secretsDir "+cfg.SecretsDir+" must be an existing directory")
}
