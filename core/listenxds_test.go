package core

import (
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/xds"
)

// speaksHTTP2 opens a connection to addr and says whether a gRPC server
// answers its HTTP/2 preface (true) or the connection is reset (false).
// The connection stays open until the test ends.
func speaksHTTP2(t *testing.T, addr string) bool {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return false // reset while dialling
	}
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	if _, err := io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"); err != nil {
		return false
	}
	var settings [9]byte
	_, err = io.ReadFull(c, settings[:])
	require.NotErrorIs(t, err, os.ErrDeadlineExceeded, "neither served nor reset")
	return err == nil
}

// The xdsMaxConnections knob reaches the listener both homes open with
// ListenXDS, and defaults to xds.DefaultMaxConnections.
func TestListenXDSHoldsXDSMaxConnections(t *testing.T) {
	assert.Equal(t, xds.DefaultMaxConnections, newCore(t, Options{}).Tuning().XDSMaxConnections)

	c := newCore(t, Options{Tuning: Tuning{XDSMaxConnections: 1}})
	lis, err := c.ListenXDS("127.0.0.1:0", "--xds-addr")
	require.NoError(t, err)
	gs := c.XDS().NewGRPCServer()
	go func() { _ = ServeGRPC(gs, lis) }()
	t.Cleanup(gs.Stop)
	require.True(t, speaksHTTP2(t, lis.Addr().String()), "the first connection is served")
	assert.False(t, speaksHTTP2(t, lis.Addr().String()), "the second is beyond the bound")
}

// An address ListenXDS cannot listen on is named with its setting.
func TestListenXDSNamesTheSetting(t *testing.T) {
	held := mustListen(t)
	_, err := newCore(t, Options{}).ListenXDS(held.Addr().String(), "xdsAddr (--xds-addr)")
	assert.ErrorContains(t, err, "xdsAddr (--xds-addr): listen for xDS on "+held.Addr().String())
}
