package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// execute runs cmd with args and returns what it printed.
func execute(t *testing.T, cmd *cobra.Command, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// runLegate runs the root command with args.
func runLegate(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return execute(t, newRootCommand(), args...)
}

// TestPKIInitAndIssueMakeAWorkingMutualTLSPair makes a CA, the server's and
// a proxy's certificates with the CLI, then completes a mutual TLS
// handshake with them over loopback, as legate serve and a proxy would.
func TestPKIInitAndIssueMakeAWorkingMutualTLSPair(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	out, err := runLegate(t, "pki", "init", "--dir", dir, "--host", "127.0.0.1")
	require.NoError(t, err, out)
	assert.Contains(t, out, "--xds-client-ca "+filepath.Join(dir, "ca.crt"))
	out, err = runLegate(t, "pki", "issue", "--dir", dir, "--node", "edge")
	require.NoError(t, err, out)
	assert.NotContains(t, out, "PRIVATE KEY", "keys are never printed")

	for _, key := range []string{"ca.key", "server/tls.key", "nodes/edge/tls.key"} {
		fi, err := os.Stat(filepath.Join(dir, key))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), key)
	}

	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	srvPair, err := tls.LoadX509KeyPair(filepath.Join(dir, "server/tls.crt"), filepath.Join(dir, "server/tls.key"))
	require.NoError(t, err)
	nodePair, err := tls.LoadX509KeyPair(filepath.Join(dir, "nodes/edge/tls.crt"), filepath.Join(dir, "nodes/edge/tls.key"))
	require.NoError(t, err)

	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{srvPair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	peerNames := make(chan []string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			peerNames <- nil
			return
		}
		defer func() { _ = c.Close() }()
		tc := c.(*tls.Conn)
		if err := tc.Handshake(); err != nil {
			peerNames <- nil
			return
		}
		peerNames <- tc.ConnectionState().PeerCertificates[0].DNSNames
	}()
	conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{
		Certificates: []tls.Certificate{nodePair}, RootCAs: pool, MinVersion: tls.VersionTLS12,
	})
	require.NoError(t, err, "the proxy verifies the server certificate for 127.0.0.1")
	require.NoError(t, conn.Handshake())
	_ = conn.Close()
	assert.Equal(t, []string{"edge"}, <-peerNames, "the server verified the proxy's certificate and sees its node ID")

	_, err = runLegate(t, "pki", "init", "--dir", dir)
	assert.ErrorContains(t, err, "already holds a CA")
	_, err = runLegate(t, "pki", "issue", "--dir", dir)
	assert.ErrorContains(t, err, "give either --node")
	_, err = runLegate(t, "pki", "issue", "--dir", filepath.Join(dir, "missing"), "--node", "edge")
	assert.ErrorContains(t, err, "run legate pki init")
}

// TestPKIInitDefaultsOutsideTheSourceTree runs pki init without --dir: the
// CA goes under the user's configuration directory, not the working
// directory, and the repository ignores key files anyway.
func TestPKIInitDefaultsOutsideTheSourceTree(t *testing.T) {
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	t.Setenv("HOME", config)
	t.Setenv("LEGATE_PKI_DIR", "")
	out, err := runLegate(t, "pki", "init")
	require.NoError(t, err, out)
	_, err = os.Stat(filepath.Join(config, "legate", "pki", "ca.key"))
	require.NoError(t, err, "the CA key is under the configuration directory")
	_, err = os.Stat("pki")
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing is written to the working directory")

	for _, key := range []string{"pki/ca.key", "pki/server/tls.key", ".legate/admin-token", "cfg/admin-token"} {
		cmd := exec.Command("git", "check-ignore", "-q", key)
		cmd.Dir = filepath.Join("..", "..")
		assert.NoError(t, cmd.Run(), "%s is ignored by git", key)
	}
}
