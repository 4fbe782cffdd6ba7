package sds

import (
	"bytes"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
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

	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/xds"
)

// selfSigned returns a fresh self-signed certificate and its key, in PEM.
func selfSigned(t *testing.T, cn string) (crt, key []byte) {
	t.Helper()
	_, c, err := pki.NewCA(cn, 24*time.Hour, time.Now())
	require.NoError(t, err)
	return c.CertPEM, c.KeyPEM
}

// build reads exts through f as Publish does.
func build(f Files, exts []render.ExternalSecret) ([]render.Resource, error) {
	var secrets []render.Resource
	s := NewServer(f, func(_ string, snap xds.Snapshot) error {
		secrets = snap.Types[resourcev3.SecretType].Resources
		return nil
	}, logr.Discard())
	err := s.Publish("edge", revisions.Publication{ExternalSecrets: exts})
	return secrets, err
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

func TestFilesBuildEachKind(t *testing.T) {
	dir := t.TempDir()
	crt, key := selfSigned(t, "edge.example")
	ca, _ := selfSigned(t, "ca.example")
	writeSecret(t, dir, "edge-cert", map[string][]byte{TLSCertFile: crt, TLSKeyFile: key})
	writeSecret(t, dir, "web/edge-ca", map[string][]byte{CACertFile: ca, TLSCertFile: crt})
	writeSecret(t, dir, "peer", map[string][]byte{TLSCertFile: crt})
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
			rs, err := build(Files{Dir: dir}, []render.ExternalSecret{tc.ext})
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
	writeSecret(t, outside, "stolen", map[string][]byte{TLSCertFile: []byte("x"), TLSKeyFile: []byte("y")})
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
			_, err := build(Files{Dir: dir}, []render.ExternalSecret{{Name: "s", Ref: tc.ref, Kind: "tls", Source: pos}})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), `secret "s"`)
			assert.Contains(t, err.Error(), "edge.yaml:7:3")
		})
	}

	_, err := build(Files{Dir: dir}, []render.ExternalSecret{{Name: "s", Ref: "tokens", Key: "../x", Kind: "opaque", Source: pos}})
	assert.ErrorContains(t, err, `key "../x" must be a plain file name`)
}

func TestMissingSecretFileErrorNamesTheFileNotTheContent(t *testing.T) {
	dir := t.TempDir()
	crt, key := selfSigned(t, "edge.example")
	writeSecret(t, dir, "edge-cert", map[string][]byte{TLSCertFile: crt})
	pos := render.Position{File: "envoy.yaml", Line: 12, Column: 7}
	exts := []render.ExternalSecret{{Name: "edge", Ref: "edge-cert", Kind: "tls", Source: pos}}

	_, err := build(Files{Dir: dir}, exts)
	require.Error(t, err)
	for _, want := range []string{`secret "edge"`, `ref "edge-cert"`, "envoy.yaml:12:7", filepath.Join(dir, "edge-cert", TLSKeyFile)} {
		assert.Contains(t, err.Error(), want)
	}
	assert.NotContains(t, err.Error(), "CERTIFICATE", "no key material in errors")

	assert.ErrorIs(t, err, revisions.ErrNotReady, "a missing file is waited for, not a fault of the revision")

	writeSecret(t, dir, "edge-cert", map[string][]byte{TLSKeyFile: {}})
	_, err = build(Files{Dir: dir}, exts)
	assert.ErrorContains(t, err, "tls.key is empty")
	assert.ErrorIs(t, err, revisions.ErrNotReady)

	writeSecret(t, dir, "edge-cert", map[string][]byte{TLSKeyFile: key})
	_, err = build(Files{Dir: ""}, exts)
	assert.ErrorContains(t, err, "no secrets directory is configured: set secretsDir or --secrets-dir")
	assert.ErrorIs(t, err, revisions.ErrNotReady)

	// A bad ref is a fault of the configuration, even beside a missing file.
	bad := append(slices.Clone(exts), render.ExternalSecret{Name: "up", Ref: "../etc", Kind: "tls", Source: pos})
	require.NoError(t, os.Remove(filepath.Join(dir, "edge-cert", TLSKeyFile)))
	_, err = build(Files{Dir: dir}, bad)
	assert.ErrorContains(t, err, `ref "../etc"`)
	assert.ErrorContains(t, err, "tls.key")
	assert.NotErrorIs(t, err, revisions.ErrNotReady)
	var pathErr *fs.PathError
	assert.NotErrorAs(t, err, &pathErr, "the missing file is named, but the error unwraps to the faults only")
	writeSecret(t, dir, "edge-cert", map[string][]byte{TLSKeyFile: key})
	_, err = build(Files{Dir: dir}, exts)
	assert.NoError(t, err)
}

func TestSecretVersionFollowsContent(t *testing.T) {
	pub := revisions.Publication{Version: "abc-1", Types: map[string]revisions.PublishedType{
		resourcev3.ClusterType: {Version: "c1", Resources: []render.Resource{{Name: "backend", Body: []byte("b")}}},
	}}
	a := []render.Resource{{Name: "edge", Body: []byte("one")}}
	b := []render.Resource{{Name: "edge", Body: []byte("two")}}

	s1, err := Snapshot(pub, a, nil)
	require.NoError(t, err)
	s2, err := Snapshot(pub, a, nil)
	require.NoError(t, err)
	s3, err := Snapshot(pub, b, nil)
	require.NoError(t, err)
	v := func(s xds.Snapshot) string { return s.Types[resourcev3.SecretType].Version }
	assert.NotEmpty(t, v(s1))
	assert.Equal(t, v(s1), v(s2), "same content, same version")
	assert.NotEqual(t, v(s1), v(s3), "new content, new version")
	assert.Equal(t, "abc-1", s1.Version)
	assert.Equal(t, "c1", s1.Types[resourcev3.ClusterType].Version, "other types untouched")
	assert.Equal(t, a, s1.Types[resourcev3.SecretType].Resources)

	plain, err := Snapshot(pub, nil, nil)
	require.NoError(t, err)
	assert.NotContains(t, plain.Types, resourcev3.SecretType, "no external secrets, no secret set")

	pub.Types[resourcev3.SecretType] = revisions.PublishedType{Version: "s1", Resources: []render.Resource{{Name: "edge"}}}
	_, err = Snapshot(pub, a, nil)
	assert.ErrorContains(t, err, `secret "edge"`)
}

func TestRefreshPushesChangedSecretsOnly(t *testing.T) {
	dir := t.TempDir()
	crt, key := selfSigned(t, "edge.example")
	writeSecret(t, dir, "edge-cert", map[string][]byte{TLSCertFile: crt, TLSKeyFile: key})
	var logs bytes.Buffer
	var sets []xds.Snapshot
	h := NewServer(Files{Dir: dir}, func(node string, snap xds.Snapshot) error {
		assert.Equal(t, "edge", node)
		sets = append(sets, snap)
		return nil
	}, logr.FromSlogHandler(slog.NewTextHandler(&logs, nil)))
	pub := revisions.Publication{
		Version:         "abc-1",
		Types:           map[string]revisions.PublishedType{},
		ExternalSecrets: []render.ExternalSecret{{Name: "edge", Ref: "edge-cert", Kind: "tls"}},
	}
	require.NoError(t, h.Publish("edge", pub))
	require.Len(t, sets, 1)
	first := sets[0].Types[resourcev3.SecretType].Version

	h.Refresh()
	assert.Len(t, sets, 1, "unchanged files are not pushed again")

	crt2, key2 := selfSigned(t, "edge.example")
	writeSecret(t, dir, "edge-cert", map[string][]byte{TLSCertFile: crt2, TLSKeyFile: key2})
	h.Refresh()
	require.Len(t, sets, 2, "a rotated certificate is pushed")
	assert.Equal(t, "abc-1", sets[1].Version, "under the same publication")
	assert.NotEqual(t, first, sets[1].Types[resourcev3.SecretType].Version)
	got := decodeSecret(t, sets[1].Types[resourcev3.SecretType].Resources[0])
	assert.Equal(t, crt2, got.GetTlsCertificate().GetCertificateChain().GetInlineBytes())

	require.NoError(t, os.Remove(filepath.Join(dir, "edge-cert", TLSKeyFile)))
	h.Refresh()
	h.Refresh()
	assert.Len(t, sets, 2, "a broken secret keeps the last good one")
	assert.Contains(t, logs.String(), "tls.key")
	assert.Equal(t, 1, bytes.Count(logs.Bytes(), []byte("cannot be served")), "logged once, not on every poll")

	err := h.Publish("edge", pub)
	require.Error(t, err, "a publication whose secrets cannot be read is refused")
	assert.Len(t, sets, 2)

	for _, material := range [][]byte{crt, key, crt2, key2} {
		assert.NotContains(t, logs.String(), string(material))
		assert.NotContains(t, err.Error(), string(material))
	}
	assert.NotContains(t, logs.String(), "PRIVATE KEY")
	assert.NotContains(t, logs.String(), "CERTIFICATE-----")
}

func TestKeyMaterialRefusedOnlyOverPlaintext(t *testing.T) {
	tlsSecret := render.ExternalSecret{Name: "edge-cert", Ref: "edge-cert", Kind: "tls"}
	opaque := render.ExternalSecret{Name: "token", Ref: "tokens", Key: "t", Kind: "opaque"}
	ca := render.ExternalSecret{Name: "ca", Ref: "ca", Kind: "validation"}
	plain := Plaintext{Insecure: true}
	assert.ErrorIs(t, plain.Refused(tlsSecret), revisions.ErrNotReady)
	assert.ErrorIs(t, plain.Refused(opaque), revisions.ErrNotReady)
	assert.NoError(t, plain.Refused(ca), "a CA bundle is public")
	assert.NoError(t, Plaintext{Insecure: true, Allowed: []string{"edge-cert"}}.Refused(tlsSecret))
	assert.Error(t, Plaintext{Insecure: true, Allowed: []string{"edge-cert"}}.Refused(opaque))
	assert.NoError(t, Plaintext{Insecure: true, Allowed: []string{"*"}}.Refused(opaque))
	assert.NoError(t, Plaintext{}.Refused(tlsSecret), "mutual TLS serves keys")
}
