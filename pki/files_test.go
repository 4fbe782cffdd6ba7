package pki

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// files is a CA and a server certificate written to a directory.
type files struct {
	ca                *CA
	cert, key, caFile string
}

func writeFiles(t *testing.T) files {
	t.Helper()
	ca, caIssued, err := NewCA("test CA", 24*time.Hour, time.Now())
	require.NoError(t, err)
	dir := t.TempDir()
	f := files{ca: ca, cert: filepath.Join(dir, "tls.crt"), key: filepath.Join(dir, "tls.key"), caFile: filepath.Join(dir, "ca.crt")}
	require.NoError(t, os.WriteFile(f.caFile, caIssued.CertPEM, 0o600))
	f.issue(t, "one.example")
	return f
}

// issue writes a new server certificate for host and moves the files'
// modification time on, as a renewal does.
func (f files) issue(t *testing.T, host string) {
	t.Helper()
	srv, err := f.ca.IssueServer([]string{host}, time.Hour, time.Now())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(f.key, srv.KeyPEM, 0o600))
	require.NoError(t, os.WriteFile(f.cert, srv.CertPEM, 0o600))
	later := time.Now().Add(time.Minute)
	require.NoError(t, os.Chtimes(f.cert, later, later))
}

func servedName(t *testing.T, k *KeyPairFiles) string {
	t.Helper()
	cert, _, err := k.Current()
	require.NoError(t, err)
	require.NotNil(t, cert.Leaf)
	return cert.Leaf.DNSNames[0]
}

func TestKeyPairFilesReloadWhenChanged(t *testing.T) {
	f := writeFiles(t)
	k, err := LoadKeyPairFiles(f.cert, f.key, f.caFile)
	require.NoError(t, err)
	_, pool, err := k.Current()
	require.NoError(t, err)
	require.NotNil(t, pool, "a CA file gives a pool")
	assert.Equal(t, "one.example", servedName(t, k))

	f.issue(t, "two.example")
	assert.Equal(t, "two.example", servedName(t, k), "a renewed certificate is taken")

	require.NoError(t, os.WriteFile(f.cert, []byte("not PEM"), 0o600))
	assert.Equal(t, "two.example", servedName(t, k), "a broken file keeps the last good one")
	require.NoError(t, os.Remove(f.key))
	assert.Equal(t, "two.example", servedName(t, k), "a missing file keeps the last good one")
}

func TestKeyPairFilesWithoutCA(t *testing.T) {
	f := writeFiles(t)
	k, err := LoadKeyPairFiles(f.cert, f.key, "")
	require.NoError(t, err)
	_, pool, err := k.Current()
	require.NoError(t, err)
	assert.Nil(t, pool)
}

func TestKeyPairFilesErrorsNameTheFile(t *testing.T) {
	f := writeFiles(t)
	missing := filepath.Join(t.TempDir(), "missing.key")
	_, err := LoadKeyPairFiles(f.cert, missing, "")
	var fe *FileError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "keyFile", fe.Field)
	assert.ErrorContains(t, err, missing)

	_, err = LoadKeyPairFiles(f.cert, f.key, f.key)
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "caFile", fe.Field)
	assert.ErrorContains(t, err, f.key+" holds no PEM certificate")
	assert.NotContains(t, err.Error(), "PRIVATE KEY", "no key material in errors")

	_, err = LoadKeyPairFiles(f.key, f.key, "")
	require.Error(t, err)
	assert.ErrorContains(t, err, "load the key pair")
	assert.NotContains(t, err.Error(), "PRIVATE KEY")
}
