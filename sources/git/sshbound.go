package git

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"golang.org/x/net/proxy"

	"github.com/legate-dev/legate/netguard"
)

// Over SSH the ref advertisement is what git-upload-pack writes before the
// client says anything, and go-git reads it whole into memory, as over
// HTTP. go-git keeps its SSH session to itself (its Commander is
// internal), but it dials through golang.org/x/net/proxy when the endpoint
// names a proxy: every SSH session dials through a "proxy" of guardScheme
// registered for that session alone, which dials through the source's
// guard and meters the connection. The meter counts what the connection
// receives (SSH's own framing included, a few KiB) until the session has
// read the advertisement; then it is lifted, and the pack that follows is
// bounded by the repository size limit (quotaFS), not by this meter.
const guardScheme = "legate-netguard"

func init() {
	proxy.RegisterDialerType(guardScheme, func(u *url.URL, _ proxy.Dialer) (proxy.Dialer, error) {
		d, ok := sshDials.Load(u.Host)
		if !ok {
			return nil, fmt.Errorf("no SSH dialer %q", u.Host)
		}
		return d.(*sshDialer), nil
	})
}

var (
	sshDials  sync.Map // id → *sshDialer
	sshDialID atomic.Uint64
	// sshAdvertisementLimit is maxAdvertisement, a variable so that a
	// test can reach it without streaming 32 MiB through SSH.
	sshAdvertisementLimit int64 = maxAdvertisement
)

// sshDialer dials one session's SSH connection through guard (nil: as
// go-git would without a proxy) and meters it.
type sshDialer struct {
	guard *netguard.Guard
	meter *advMeter
}

// sshSessionProxy registers a dialer for one SSH session to host (the
// endpoint's host, as the user wrote it) and returns the go-git proxy
// option naming it, with the meter and a function that unregisters it
// once the session is open.
func sshSessionProxy(g *netguard.Guard, host string, limit int64) (transport.ProxyOptions, *advMeter, func()) {
	id := "s" + strconv.FormatUint(sshDialID.Add(1), 10)
	m := newAdvMeter(host, limit)
	sshDials.Store(id, &sshDialer{guard: g, meter: m})
	return transport.ProxyOptions{URL: guardScheme + "://" + id}, m, func() { sshDials.Delete(id) }
}

func (d *sshDialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}

func (d *sshDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var conn net.Conn
	var err error
	if d.guard == nil {
		// what go-git does without a proxy (it honours ALL_PROXY)
		conn, err = proxy.Dial(ctx, network, addr)
	} else {
		conn, err = d.guard.DialContext(ctx, network, addr)
	}
	if err != nil {
		return nil, err
	}
	return &meteredConn{Conn: conn, m: d.meter}, nil
}

// advMeter bounds what a connection receives until it is lifted. Its
// methods are safe for concurrent use (x/crypto/ssh reads the connection
// on a goroutine of its own) and do nothing on a nil meter.
type advMeter struct {
	host   string
	limit  int64
	read   atomic.Int64
	lifted atomic.Bool
	over   atomic.Bool
}

func newAdvMeter(host string, limit int64) *advMeter {
	return &advMeter{host: host, limit: limit}
}

// lift ends the advertisement: what the connection receives from now on
// is not counted.
func (m *advMeter) lift() {
	if m != nil {
		m.lifted.Store(true)
	}
}

// err is the error of an advertisement cut at the bound, nil otherwise.
func (m *advMeter) err() error {
	if m == nil || !m.over.Load() {
		return nil
	}
	return fmt.Errorf("the ref advertisement of %s is over %d MiB, legate's bound", m.host, m.limit>>20)
}

type meteredConn struct {
	net.Conn
	m *advMeter
}

func (c *meteredConn) Read(p []byte) (int, error) {
	if c.m.lifted.Load() {
		return c.Conn.Read(p)
	}
	// One byte past the bound tells an answer over it from one at it.
	left := c.m.limit - c.m.read.Load() + 1
	if left <= 0 {
		c.m.over.Store(true)
		return 0, c.m.err()
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := c.Conn.Read(p)
	if c.m.read.Add(int64(n)) > c.m.limit && !c.m.lifted.Load() {
		c.m.over.Store(true)
		return 0, c.m.err()
	}
	return n, err
}
