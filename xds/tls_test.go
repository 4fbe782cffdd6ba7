package xds

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type certsFunc func() (*tls.Certificate, *x509.CertPool, error)

func (f certsFunc) Current() (*tls.Certificate, *x509.CertPool, error) { return f() }

// Every handshake asks for the current certificates; with a CA pool a
// client certificate is required.
func TestServerTLSTakesCurrentCertificates(t *testing.T) {
	one, two := &tls.Certificate{Certificate: [][]byte{{1}}}, &tls.Certificate{Certificate: [][]byte{{2}}}
	current, pool := one, (*x509.CertPool)(nil)
	var fail error
	cfg := ServerTLS(certsFunc(func() (*tls.Certificate, *x509.CertPool, error) { return current, pool, fail }))
	assert.Equal(t, uint16(tls.VersionTLS12), cfg.MinVersion)

	c, err := cfg.GetConfigForClient(&tls.ClientHelloInfo{})
	require.NoError(t, err)
	assert.Equal(t, *one, c.Certificates[0])
	assert.Equal(t, tls.NoClientCert, c.ClientAuth)
	assert.Equal(t, []string{"h2"}, c.NextProtos)
	assert.Equal(t, uint16(tls.VersionTLS12), c.MinVersion)

	current, pool = two, x509.NewCertPool()
	c, err = cfg.GetConfigForClient(&tls.ClientHelloInfo{})
	require.NoError(t, err)
	assert.Equal(t, *two, c.Certificates[0], "a renewed certificate is used at the next handshake")
	assert.Equal(t, tls.RequireAndVerifyClientCert, c.ClientAuth)
	assert.Same(t, pool, c.ClientCAs)

	fail = errors.New("no certificate")
	_, err = cfg.GetConfigForClient(&tls.ClientHelloInfo{})
	assert.ErrorContains(t, err, "no certificate")
}

func TestBeyondLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:18000": false, "[::1]:18000": false, "localhost:18000": false, "127.0.0.2:1": false,
		":18000": true, "0.0.0.0:18000": true, "[::]:18000": true, "10.0.0.1:18000": true,
		"legate.example:18000": true, "no-port": true,
	} {
		assert.Equal(t, want, BeyondLoopback(addr), addr)
	}
}
