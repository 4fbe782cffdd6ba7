package standalone

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io/fs"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/xds"
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

func inlineBytes(b []byte) *corev3.DataSource {
	return &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: b}}
}

func decodeSecret(t *testing.T, r render.Resource) *tlsv3.Secret {
	t.Helper()
	var s tlsv3.Secret
	require.NoError(t, proto.Unmarshal(r.Body, &s))
	return &s
}

func TestSecretReaderBuildsEachKind(t *testing.T) {
	dir := t.TempDir()
	crt, key := selfSigned(t, "edge.example")
	ca, _ := selfSigned(t, "ca.example")
	writeSecret(t, dir, "edge-cert", map[string][]byte{tlsCertFile: crt, tlsKeyFile: key})
	writeSecret(t, dir, "web/edge-ca", map[string][]byte{caCertFile: ca, tlsCertFile: crt})
	writeSecret(t, dir, "peer", map[string][]byte{tlsCertFile: crt})
	writeSecret(t, dir, "tokens", map[string][]byte{"hmac": []byte("hmac-value")})
	pos := render.Position{File: "envoy.yaml", Line: 4, Column: 5}

	for _, tc := range []struct {
		name string
		ext  render.ExternalSecret
		want *tlsv3.Secret
	}{{
		name: "tls from tls.crt and tls.key",
		ext:  render.ExternalSecret{Name: "edge", Ref: "edge-cert", Kind: "tls", Source: pos},
		want: &tlsv3.Secret{Name: "edge", Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
			CertificateChain: inlineBytes(crt), PrivateKey: inlineBytes(key),
		}}},
	}, {
		name: "validation from ca.crt, namespaced ref",
		ext:  render.ExternalSecret{Name: "ca", Ref: "web/edge-ca", Kind: "validation", Source: pos},
		want: &tlsv3.Secret{Name: "ca", Type: &tlsv3.Secret_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
			TrustedCa: inlineBytes(ca),
		}}},
	}, {
		name: "validation from tls.crt without ca.crt",
		ext:  render.ExternalSecret{Name: "peer", Ref: "peer", Kind: "validation", Source: pos},
		want: &tlsv3.Secret{Name: "peer", Type: &tlsv3.Secret_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
			TrustedCa: inlineBytes(crt),
		}}},
	}, {
		name: "opaque from the key's file",
		ext:  render.ExternalSecret{Name: "hmac", Ref: "tokens", Key: "hmac", Kind: "opaque", Source: pos},
		want: &tlsv3.Secret{Name: "hmac", Type: &tlsv3.Secret_GenericSecret{GenericSecret: &tlsv3.GenericSecret{
			Secret: inlineBytes([]byte("hmac-value")),
		}}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := secretReader{dir: dir}.build([]render.ExternalSecret{tc.ext})
			require.NoError(t, err)
			require.Len(t, rs, 1)
			assert.Equal(t, tc.ext.Name, rs[0].Name)
			assert.Equal(t, pos, rs[0].Source)
			assert.Empty(t, cmp.Diff(tc.want, decodeSecret(t, rs[0]), protocmp.Transform()))
		})
	}
}

func TestSecretRefMustBePlainNames(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	writeSecret(t, outside, "stolen", map[string][]byte{tlsCertFile: []byte("x"), tlsKeyFile: []byte("y")})
	// A symbolic link out of the directory is not followed either.
	require.NoError(t, os.Symlink(filepath.Join(outside, "stolen"), filepath.Join(dir, "link")))
	pos := render.Position{File: "edge.yaml", Line: 7, Column: 3}

	for _, tc := range []struct {
		ref, want string
	}{
		{"..", `ref ".." must be NAME or NAMESPACE/NAME`},
		{"../stolen", `ref "../stolen" must be`},
		{"/etc/ssl", `ref "/etc/ssl" must be`},
		{"a/../../stolen", `must be`},
		{"a/b/c", `must be`},
		{"", `ref "" must be`},
		{`a\b`, `must be`},
		{"link", "secret \"s\" (ref \"link\", edge.yaml:7:3): read"},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			_, err := secretReader{dir: dir}.build([]render.ExternalSecret{{Name: "s", Ref: tc.ref, Kind: "tls", Source: pos}})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), `secret "s"`)
			assert.Contains(t, err.Error(), "edge.yaml:7:3")
		})
	}

	_, err := secretReader{dir: dir}.build([]render.ExternalSecret{{Name: "s", Ref: "tokens", Key: "../x", Kind: "opaque", Source: pos}})
	assert.ErrorContains(t, err, `key "../x" must be a plain file name`)
}

func TestMissingSecretFileErrorNamesTheFileNotTheContent(t *testing.T) {
	dir := t.TempDir()
	crt, key := selfSigned(t, "edge.example")
	writeSecret(t, dir, "edge-cert", map[string][]byte{tlsCertFile: crt})
	pos := render.Position{File: "envoy.yaml", Line: 12, Column: 7}
	exts := []render.ExternalSecret{{Name: "edge", Ref: "edge-cert", Kind: "tls", Source: pos}}

	_, err := secretReader{dir: dir}.build(exts)
	require.Error(t, err)
	for _, want := range []string{`secret "edge"`, `ref "edge-cert"`, "envoy.yaml:12:7", filepath.Join(dir, "edge-cert", tlsKeyFile)} {
		assert.Contains(t, err.Error(), want)
	}
	assert.NotContains(t, err.Error(), "CERTIFICATE", "no key material in errors")

	assert.ErrorIs(t, err, revisions.ErrNotReady, "a missing file is waited for, not a fault of the revision")

	writeSecret(t, dir, "edge-cert", map[string][]byte{tlsKeyFile: {}})
	_, err = secretReader{dir: dir}.build(exts)
	assert.ErrorContains(t, err, "tls.key is empty")
	assert.ErrorIs(t, err, revisions.ErrNotReady)

	writeSecret(t, dir, "edge-cert", map[string][]byte{tlsKeyFile: key})
	_, err = secretReader{dir: ""}.build(exts)
	assert.ErrorContains(t, err, "no secrets directory is configured: set secretsDir or --secrets-dir")
	assert.ErrorIs(t, err, revisions.ErrNotReady)

	// A bad ref is a fault of the configuration, even beside a missing file.
	bad := append(slices.Clone(exts), render.ExternalSecret{Name: "up", Ref: "../etc", Kind: "tls", Source: pos})
	require.NoError(t, os.Remove(filepath.Join(dir, "edge-cert", tlsKeyFile)))
	_, err = secretReader{dir: dir}.build(bad)
	assert.ErrorContains(t, err, `ref "../etc"`)
	assert.ErrorContains(t, err, "tls.key")
	assert.NotErrorIs(t, err, revisions.ErrNotReady)
	var pathErr *fs.PathError
	assert.NotErrorAs(t, err, &pathErr, "the missing file is named, but the error unwraps to the faults only")
	writeSecret(t, dir, "edge-cert", map[string][]byte{tlsKeyFile: key})
	_, err = secretReader{dir: dir}.build(exts)
	assert.NoError(t, err)
}

func TestSecretVersionFollowsContent(t *testing.T) {
	pub := revisions.Publication{Version: "abc-1", Types: map[string]revisions.PublishedType{
		resourcev3.ClusterType: {Version: "c1", Resources: []render.Resource{{Name: "backend", Body: []byte("b")}}},
	}}
	a := []render.Resource{{Name: "edge", Body: []byte("one")}}
	b := []render.Resource{{Name: "edge", Body: []byte("two")}}

	s1, err := withSecrets(pub, a)
	require.NoError(t, err)
	s2, err := withSecrets(pub, a)
	require.NoError(t, err)
	s3, err := withSecrets(pub, b)
	require.NoError(t, err)
	v := func(s xds.Snapshot) string { return s.Types[resourcev3.SecretType].Version }
	assert.NotEmpty(t, v(s1))
	assert.Equal(t, v(s1), v(s2), "same content, same version")
	assert.NotEqual(t, v(s1), v(s3), "new content, new version")
	assert.Equal(t, "abc-1", s1.Version)
	assert.Equal(t, "c1", s1.Types[resourcev3.ClusterType].Version, "other types untouched")
	assert.Equal(t, a, s1.Types[resourcev3.SecretType].Resources)

	plain, err := withSecrets(pub, nil)
	require.NoError(t, err)
	assert.NotContains(t, plain.Types, resourcev3.SecretType, "no external secrets, no secret set")

	pub.Types[resourcev3.SecretType] = revisions.PublishedType{Version: "s1", Resources: []render.Resource{{Name: "edge"}}}
	_, err = withSecrets(pub, a)
	assert.ErrorContains(t, err, `secret "edge"`)
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

func TestRefreshPushesChangedSecretsOnly(t *testing.T) {
	dir := t.TempDir()
	crt, key := selfSigned(t, "edge.example")
	writeSecret(t, dir, "edge-cert", map[string][]byte{tlsCertFile: crt, tlsKeyFile: key})
	var logs syncBuffer
	var sets []xds.Snapshot
	h := newSecretHome(secretReader{dir: dir}, func(node string, snap xds.Snapshot) error {
		assert.Equal(t, "edge", node)
		sets = append(sets, snap)
		return nil
	}, logr.FromSlogHandler(slog.NewTextHandler(&logs, nil)))
	pub := revisions.Publication{
		Version:         "abc-1",
		Types:           map[string]revisions.PublishedType{},
		ExternalSecrets: []render.ExternalSecret{{Name: "edge", Ref: "edge-cert", Kind: "tls"}},
	}
	require.NoError(t, h.publish("edge", pub))
	require.Len(t, sets, 1)
	first := sets[0].Types[resourcev3.SecretType].Version

	h.refresh()
	assert.Len(t, sets, 1, "unchanged files are not pushed again")

	crt2, key2 := selfSigned(t, "edge.example")
	writeSecret(t, dir, "edge-cert", map[string][]byte{tlsCertFile: crt2, tlsKeyFile: key2})
	h.refresh()
	require.Len(t, sets, 2, "a rotated certificate is pushed")
	assert.Equal(t, "abc-1", sets[1].Version, "under the same publication")
	assert.NotEqual(t, first, sets[1].Types[resourcev3.SecretType].Version)
	got := decodeSecret(t, sets[1].Types[resourcev3.SecretType].Resources[0])
	assert.Equal(t, crt2, got.GetTlsCertificate().GetCertificateChain().GetInlineBytes())

	require.NoError(t, os.Remove(filepath.Join(dir, "edge-cert", tlsKeyFile)))
	h.refresh()
	h.refresh()
	assert.Len(t, sets, 2, "a broken secret keeps the last good one")
	assert.Contains(t, logs.String(), "tls.key")
	assert.Equal(t, 1, bytes.Count([]byte(logs.String()), []byte("cannot be served")), "logged once, not on every poll")

	err := h.publish("edge", pub)
	require.Error(t, err, "a publication whose secrets cannot be read is refused")
	assert.Len(t, sets, 2)

	for _, material := range [][]byte{crt, key, crt2, key2} {
		assert.NotContains(t, logs.String(), string(material))
		assert.NotContains(t, err.Error(), string(material))
	}
	assert.NotContains(t, logs.String(), "PRIVATE KEY")
	assert.NotContains(t, logs.String(), "CERTIFICATE-----")
}

func TestSecretsConfigChecks(t *testing.T) {
	cfg := Config{Sources: []SourceConfig{{Name: "a", Git: &GitSource{URL: "/srv/cfg"}}}, SecretsInterval: Duration{-time.Second}}
	assert.ErrorContains(t, cfg.Validate(), "secretsInterval: must not be negative")

	cfg.SecretsInterval = Duration{}
	cfg.XDSAddr, cfg.HTTPAddr, cfg.StateDir = "127.0.0.1:0", "127.0.0.1:0", t.TempDir()
	cfg.SecretsDir = filepath.Join(t.TempDir(), "absent")
	_, err := New(cfg, Options{})
	assert.ErrorContains(t, err, "secretsDir "+cfg.SecretsDir+" must be an existing directory")
}
