package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestXDSTLSFiles(t *testing.T) {
	none := XDSTLSFiles{}
	assert.False(t, none.Set())
	assert.Empty(t, none.Problems())
	opt, err := none.TLSConfig()
	require.NoError(t, err)
	assert.Nil(t, opt, "no file, no TLS")
	assert.Equal(t, XDSSecurity{Addr: ":1"}, none.Security(":1"))

	caOnly := XDSTLSFiles{ClientCA: "/ca.crt"}
	errs := caOnly.Problems()
	require.Len(t, errs, 2)
	assert.EqualError(t, errs[0], "xdsTLS.certFile (--xds-tls-cert): required for xDS over TLS")
	assert.EqualError(t, errs[1], "xdsTLS.keyFile (--xds-tls-key): required for xDS over TLS")
	assert.Len(t, none.Missing(), 2, "a caller that wants TLS gets both")

	assert.Equal(t, XDSSecurity{Addr: ":1", TLS: true}, XDSTLSFiles{Cert: "c", Key: "k"}.Security(":1"))
	assert.Equal(t, XDSSecurity{Addr: ":1", TLS: true, MutualTLS: true}, XDSTLSFiles{Cert: "c", Key: "k", ClientCA: "ca"}.Security(":1"))

	_, err = XDSTLSFiles{Cert: "/nonexistent/tls.crt", Key: "/nonexistent/tls.key"}.TLSConfig()
	assert.ErrorContains(t, err, "xdsTLS.certFile (--xds-tls-cert): stat /nonexistent/tls.crt")
}
