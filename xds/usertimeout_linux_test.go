package xds

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The bound's wrapper hides the *net.TCPConn from grpc-go, which sets
// TCP_USER_TIMEOUT only on one it recognises: the wrapper sets it itself.
func TestBoundConnectionKeepsTheUserTimeout(t *testing.T) {
	s, err := New(Options{})
	require.NoError(t, err)
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	lis := s.BoundListener(raw)
	t.Cleanup(func() { _ = lis.Close() })
	client, err := net.DialTimeout("tcp", raw.Addr().String(), waitFor)
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	c, err := lis.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })

	tc, ok := c.(*boundConn).Conn.(*net.TCPConn)
	require.True(t, ok)
	sc, err := tc.SyscallConn()
	require.NoError(t, err)
	var got int
	var gerr error
	require.NoError(t, sc.Control(func(fd uintptr) {
		got, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
	}))
	require.NoError(t, gerr)
	assert.Equal(t, int(pingTimeout/time.Millisecond), got)
}
