package netguard

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A taken port is named with the setting that chose it and what to do;
// another failure keeps the setting and the system's own reason.
func TestListenNamesTheSetting(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = taken.Close() })

	_, err = Listen("xDS", taken.Addr().String(), "--xds-addr")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--xds-addr: listen for xDS on "+taken.Addr().String()+": the address is in use, by another legate or another program: stop it or choose another address")

	_, err = Listen("the status API", "127.0.0.1:http-nonexistent", "--http-addr")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--http-addr: listen for the status API on 127.0.0.1:http-nonexistent: ")
	assert.NotContains(t, err.Error(), "in use")

	lis, err := Listen("xDS", "127.0.0.1:0", "--xds-addr")
	require.NoError(t, err)
	require.NoError(t, lis.Close())
}
