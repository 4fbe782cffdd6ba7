package serveconfig

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/xds"
)

func TestDefaultsListenOnLoopback(t *testing.T) {
	cfg := Config{}.WithDefaults()
	assert.Equal(t, "127.0.0.1:18000", cfg.XDSAddr)
	assert.Equal(t, "127.0.0.1:8080", cfg.HTTPAddr)
	assert.False(t, xds.BeyondLoopback(cfg.XDSAddr))
	assert.False(t, xds.BeyondLoopback(cfg.HTTPAddr))
}

func TestXDSTLSConfigErrors(t *testing.T) {
	err := Config{
		Sources: []SourceConfig{{Name: "a", Git: &GitSource{URL: "/srv/cfg"}}},
		XDSTLS:  &XDSTLSConfig{ClientCAFile: "/ca.crt"},
	}.Validate()
	require.Error(t, err)
	assert.ErrorContains(t, err, "xdsTLS.certFile (--xds-tls-cert): required")
	assert.ErrorContains(t, err, "xdsTLS.keyFile (--xds-tls-key): required")
}

func TestXDSExposureWarning(t *testing.T) {
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 18000}
	loop6 := &net.TCPAddr{IP: net.IPv6loopback, Port: 18000}
	all := &net.TCPAddr{IP: net.IPv4zero, Port: 18000}
	lan := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 18000}
	mtls := &XDSTLSConfig{CertFile: "c", KeyFile: "k", ClientCAFile: "ca"}
	serverTLS := &XDSTLSConfig{CertFile: "c", KeyFile: "k"}
	for _, tc := range []struct {
		addr *net.TCPAddr
		cfg  *XDSTLSConfig
		want string
	}{
		{loop, nil, ""},
		{loop6, nil, ""},
		{all, mtls, ""},
		{lan, mtls, ""},
		{all, nil, "xDS is served on 0.0.0.0:18000 over plaintext: any client"},
		{lan, serverTLS, "over TLS without client certificates"},
	} {
		got := Config{XDSTLS: tc.cfg}.XDSExposureWarning(tc.addr)
		if tc.want == "" {
			assert.Empty(t, got, "%s", tc.addr)
			continue
		}
		assert.Contains(t, got, tc.want, "%s", tc.addr)
		assert.Contains(t, got, "--xds-client-ca")
	}
}
