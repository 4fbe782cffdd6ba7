package xds

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxConnections is Options.MaxConnections' default. legate is
// benchmarked at 10 000 streams on one replica, and a proxy holds one
// connection (grpc-go one per management server), so a real fleet stays
// far below five times that; yet the bound keeps a client that opens
// connections without end from exhausting the process's file descriptors
// and the memory every connection's transport holds (a few tens of KiB
// each: 50 000 of them stay within a few GiB).
const DefaultMaxConnections = 50000

// refusalLogEvery bounds how often refused connections are logged: a
// client hammering a full listener must not flood the log too.
const refusalLogEvery = time.Minute

// BoundListener returns lis holding at most Options.MaxConnections open
// connections. A connection accepted beyond the bound is reset at once,
// on the accepting goroutine (no goroutine, no TLS handshake, no HTTP/2
// state is spent on it), counted in legate_xds_connections_refused_total
// and logged at most once a minute. Each call bounds its own listener.
func (s *Server) BoundListener(lis net.Listener) net.Listener {
	return &boundListener{Listener: lis, s: s, max: int64(s.opts.MaxConnections)}
}

type boundListener struct {
	net.Listener
	s   *Server
	max int64

	open atomic.Int64

	// logMu guards the refusals counted since the last line and when it
	// was written.
	logMu   sync.Mutex
	refused int
	lastLog time.Time
}

// Accept returns the next connection within the bound, refusing those
// beyond it. It returns only the listener's own errors.
func (l *boundListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			l.refuse(c)
			continue
		}
		l.s.metrics.conns.Inc()
		// The wrapper hides the *net.TCPConn from grpc-go, which would
		// set TCP_USER_TIMEOUT on it to its keepalive timeout: set it
		// here instead, so that a peer gone silent with data unacked is
		// dropped as soon as before.
		setUserTimeout(c, pingTimeout)
		return &boundConn{Conn: c, l: l, ready: newReadyRead(c)}, nil
	}
}

// refuse reports c, then resets it (no FIN handshake, no TIME_WAIT kept
// on this side).
func (l *boundListener) refuse(c net.Conn) {
	l.logRefusal(c.RemoteAddr())
	l.s.metrics.connsRefused.Inc()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// logRefusal logs the refusals at most once per refusalLogEvery, with how
// many were kept back since the last line.
func (l *boundListener) logRefusal(peer net.Addr) {
	now := l.s.opts.Clock.Now()
	l.logMu.Lock()
	l.refused++
	if !l.lastLog.IsZero() && now.Sub(l.lastLog) < refusalLogEvery {
		l.logMu.Unlock()
		return
	}
	n := l.refused
	l.refused, l.lastLog = 0, now
	l.logMu.Unlock()
	l.s.opts.Log.Info("refusing xDS connections: the listener holds its maximum of open connections; raise the setting if a fleet this large is expected",
		"addr", l.Addr().String(), "max", l.max, "setting", l.s.opts.MaxConnectionsSetting, "refused", n, "lastPeer", peerHost(peer))
}

// peerHost is the host of addr without its port ("" when unknown).
func peerHost(addr net.Addr) string {
	if addr == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}

// boundConn gives its slot back when closed, once however often Close
// is called.
type boundConn struct {
	net.Conn
	l      *boundListener
	closed atomic.Bool
	// ready reads without pinning a buffer (connread_linux.go); nil
	// elsewhere.
	ready *readyRead
}

func (c *boundConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.l.open.Add(-1)
		c.l.s.metrics.conns.Dec()
	}
	return c.Conn.Close()
}
