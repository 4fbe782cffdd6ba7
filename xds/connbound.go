package xds

import (
	"net"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/legate-dev/legate/netguard"
)

// DefaultMaxConnections is Options.MaxConnections' default. legate is
// benchmarked at 10 000 streams on one replica, and a proxy holds one
// connection (grpc-go one per management server), so a real fleet stays
// far below five times that; yet the bound keeps a client that opens
// connections without end from exhausting the process's file descriptors
// and the memory every connection's transport holds (a few tens of KiB
// each: 50 000 of them stay within a few GiB).
const DefaultMaxConnections = 50000

// BoundListener returns lis holding at most Options.MaxConnections open
// connections (netguard.Limit). A connection accepted beyond the bound is
// reset at once, on the accepting goroutine (no goroutine, no TLS
// handshake, no HTTP/2 state is spent on it), counted in
// legate_xds_connections_refused_total and logged at most once a minute.
// Each call bounds its own listener.
func (s *Server) BoundListener(lis net.Listener) net.Listener {
	return netguard.Limit{
		What: "xDS", Max: s.opts.MaxConnections, Setting: s.opts.MaxConnectionsSetting,
		Log: s.opts.Log, Clock: s.opts.Clock,
		Refused: s.metrics.connsRefused.Inc,
		Wrap: func(c net.Conn, release func()) net.Conn {
			s.metrics.conns.Inc()
			// The wrapper hides the *net.TCPConn from grpc-go, which
			// would set TCP_USER_TIMEOUT on it to its keepalive timeout:
			// set it here instead, so that a peer gone silent with data
			// unacked is dropped as soon as before.
			setUserTimeout(c, pingTimeout)
			return &boundConn{Conn: c, release: release, conns: s.metrics.conns, ready: newReadyRead(c)}
		},
	}.Listener(lis)
}

// boundConn gives its place back when closed, once however often Close
// is called.
type boundConn struct {
	net.Conn
	release func()
	conns   prometheus.Gauge
	closed  atomic.Bool
	// ready reads without pinning a buffer (connread_linux.go); nil
	// elsewhere.
	ready *readyRead
}

// NetConn is the connection under the bound, which the lean transport
// writes to with writev.
func (c *boundConn) NetConn() net.Conn { return c.Conn }

func (c *boundConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.release()
		c.conns.Dec()
	}
	return c.Conn.Close()
}
