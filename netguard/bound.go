package netguard

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
)

// MaxHTTPConnections bounds the open connections of each HTTP listener
// (the status API and its webhook receivers, the admission webhooks).
// Their clients hold a few each: browsers, `legate status`, a metrics
// scraper, a forge's deliveries, the API server's calls. The bound is for
// a client that opens connections without end: each one holds a file
// descriptor, a goroutine and its TLS and HTTP state until the server's
// header timeout, and enough of them would exhaust the process. (The xDS
// listener has its own bound, sized for fleets: --xds-max-connections.)
const MaxHTTPConnections = 4096

// refusalLogEvery bounds how often refused connections are logged: a
// client hammering a full listener must not flood the log too.
const refusalLogEvery = time.Minute

// Limit bounds the open connections of a listener (Listener).
type Limit struct {
	// What names the listener in the log ("the status API").
	What string
	// Max is the most connections open at once.
	Max int
	// Setting names the setting that raises Max ("" when none).
	Setting string
	// Log receives a line about refused connections, at most once a
	// minute; Clock (the real clock when nil) times it.
	Log   logr.Logger
	Clock clock.PassiveClock
	// Refused, when set, is called for each connection refused (a
	// metric).
	Refused func()
	// Wrap, when set, makes each accepted connection into the one the
	// listener returns; that one must call release exactly once, when it
	// is first closed, to give its place back. Without Wrap the
	// listener's own wrapper does so.
	Wrap func(c net.Conn, release func()) net.Conn
}

// Listener returns lis holding at most l.Max open connections. A
// connection accepted beyond the bound is reset at once, on the accepting
// goroutine (no goroutine, TLS handshake or HTTP state is spent on it),
// counted and logged. Each call bounds its own listener.
func (l Limit) Listener(lis net.Listener) net.Listener {
	if l.Clock == nil {
		l.Clock = clock.RealClock{}
	}
	return &boundListener{Listener: lis, l: l}
}

// Bound returns lis holding at most MaxHTTPConnections open connections,
// refusals logged to log: the bound of an HTTP listener.
func Bound(lis net.Listener, what string, log logr.Logger) net.Listener {
	return Limit{What: what, Max: MaxHTTPConnections, Log: log}.Listener(lis)
}

type boundListener struct {
	net.Listener
	l    Limit
	open atomic.Int64

	// logMu guards the refusals counted since the last line and when it
	// was written.
	logMu   sync.Mutex
	refused int
	lastLog time.Time
}

// Accept returns the next connection within the bound, refusing those
// beyond it. It returns only the listener's own errors.
func (b *boundListener) Accept() (net.Conn, error) {
	for {
		c, err := b.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if b.open.Add(1) > int64(b.l.Max) {
			b.open.Add(-1)
			b.refuse(c)
			continue
		}
		if b.l.Wrap != nil {
			return b.l.Wrap(c, b.release), nil
		}
		return &boundConn{Conn: c, release: b.release}, nil
	}
}

// release gives one connection's place back.
func (b *boundListener) release() { b.open.Add(-1) }

// refuse reports c, then resets it: no FIN handshake, no TIME_WAIT kept
// on this side.
func (b *boundListener) refuse(c net.Conn) {
	b.logRefusal(c.RemoteAddr())
	if b.l.Refused != nil {
		b.l.Refused()
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// logRefusal logs the refusals at most once per refusalLogEvery, with how
// many were kept back since the last line.
func (b *boundListener) logRefusal(peer net.Addr) {
	now := b.l.Clock.Now()
	b.logMu.Lock()
	b.refused++
	if !b.lastLog.IsZero() && now.Sub(b.lastLog) < refusalLogEvery {
		b.logMu.Unlock()
		return
	}
	n := b.refused
	b.refused, b.lastLog = 0, now
	b.logMu.Unlock()
	msg := "refusing connections: the listener holds its maximum of open connections"
	kv := []any{"listener", b.l.What, "addr", b.Addr().String(), "max", b.l.Max, "refused", n, "lastPeer", peerHost(peer)}
	if b.l.Setting != "" {
		msg += "; raise the setting if this many clients are expected"
		kv = append(kv, "setting", b.l.Setting)
	}
	b.l.Log.Info(msg, kv...)
}

// boundConn gives its place back when closed, once however often Close
// is called.
type boundConn struct {
	net.Conn
	release func()
	closed  atomic.Bool
}

func (c *boundConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.release()
	}
	return c.Conn.Close()
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
