package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

type guardKey struct{}

// NewContext returns ctx carrying g, for a transport shared by guarded and
// unguarded callers (ContextTransport). A nil g leaves ctx unguarded.
func NewContext(ctx context.Context, g *Guard) context.Context {
	if g == nil {
		return ctx
	}
	return context.WithValue(ctx, guardKey{}, g)
}

// FromContext is the Guard ctx carries, or nil.
func FromContext(ctx context.Context) *Guard {
	g, _ := ctx.Value(guardKey{}).(*Guard)
	return g
}

// Dial timings, as net/http's default transport has them.
const (
	dialTimeout   = 30 * time.Second
	dialKeepAlive = 30 * time.Second
)

// DialContext dials addr ("host:port") unless every address the host
// resolves to is refused by g; it dials as a net.Dialer would when g is
// nil. The check runs on the resolved address right before connect, so a
// name rebound between a URL check and the dial is caught.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: dialKeepAlive}
	if g == nil {
		return d.DialContext(ctx, network, addr)
	}
	if g.trustedProxy(ctx, addr) {
		return d.DialContext(ctx, network, addr)
	}
	d.Control = g.control
	conn, err := d.DialContext(ctx, network, addr)
	var refused *RefusedError
	if errors.As(err, &refused) {
		// net.Dialer's error names the resolved address and port; the
		// refusal says only the host and the kind of address.
		host, _, splitErr := net.SplitHostPort(addr)
		if splitErr != nil {
			host = addr
		}
		return nil, &RefusedError{Host: host, Kind: refused.Kind, hint: g.hint}
	}
	return conn, err
}

// control is the net.Dialer Control function: it sees the address about
// to be connected, after resolution.
func (g *Guard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &RefusedError{Kind: Reserved}
	}
	if ok, kind := g.Allowed(ap.Addr()); !ok {
		return &RefusedError{Kind: kind}
	}
	return nil
}

// checkHost resolves host and refuses it when any address it resolves to
// is refused: for a request sent through a proxy, which resolves and
// dials the host itself.
func (g *Guard) checkHost(ctx context.Context, host string) error {
	if g == nil {
		return nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", host, err)
	}
	for _, a := range addrs {
		if ok, kind := g.Allowed(a); !ok {
			return &RefusedError{Host: host, Kind: kind, hint: g.hint}
		}
	}
	return nil
}

type proxyKey struct{}

// trustedProxy reports whether addr is the proxy the transport chose for
// the request being sent: the operator's own (HTTPS_PROXY), dialled
// whatever its address.
func (g *Guard) trustedProxy(ctx context.Context, addr string) bool {
	p, _ := ctx.Value(proxyKey{}).(string)
	return p != "" && strings.EqualFold(p, addr)
}

// RedirectRule says whether a redirect to another host than the one
// redirecting may be followed; nil follows none.
type RedirectRule func(next *http.Request) bool

// Transport is an http.RoundTripper that dials through the Guard its
// requests' contexts carry (NewContext), else through g, and refuses a
// redirect to another host unless cross allows it. A request sent through
// the environment's proxy has its host resolved and checked first (the
// proxy dials it; a name rebound between the two is not caught then).
// Requests of different guards never share a connection.
//
// A nil g (and no Guard in the context) makes it net/http's default
// transport, redirects included.
func (g *Guard) Transport(cross RedirectRule) http.RoundTripper {
	return &transport{fixed: g, cross: cross, proxy: http.ProxyFromEnvironment, bases: map[*Guard]*http.Transport{}}
}

// ContextTransport is the transport of a client shared by guarded and
// unguarded callers: each request is guarded by the Guard its context
// carries, if any (go-git's HTTP client is one per process).
func ContextTransport(cross RedirectRule) http.RoundTripper {
	var g *Guard
	return g.Transport(cross)
}

type transport struct {
	fixed *Guard
	cross RedirectRule
	proxy func(*http.Request) (*url.URL, error)

	mu sync.Mutex
	// bases are net/http transports, one per guard (nil: unguarded), so
	// that a connection dialled for one is never reused for another.
	bases map[*Guard]*http.Transport
}

func (t *transport) base(g *Guard) *http.Transport {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b, ok := t.bases[g]; ok {
		return b
	}
	b := http.DefaultTransport.(*http.Transport).Clone()
	b.Proxy = t.proxy
	b.DialContext = g.DialContext
	t.bases[g] = b
	return b
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	g := FromContext(req.Context())
	if g == nil {
		g = t.fixed
	}
	if g == nil {
		return t.base(nil).RoundTrip(req)
	}
	if prev := req.Response; prev != nil && prev.Request != nil && !strings.EqualFold(prev.Request.URL.Hostname(), req.URL.Hostname()) {
		if t.cross == nil || !t.cross(req) {
			closeBody(req)
			return nil, fmt.Errorf("redirect from %s to %s refused: legate follows redirects within one host only", prev.Request.URL.Hostname(), req.URL.Hostname())
		}
	}
	if proxy, err := t.proxy(req); err == nil && proxy != nil {
		if err := g.checkHost(req.Context(), req.URL.Hostname()); err != nil {
			closeBody(req)
			return nil, err
		}
		if addr, err := hostPort(proxy); err == nil {
			req = req.WithContext(context.WithValue(req.Context(), proxyKey{}, addr))
		}
	}
	return t.base(g).RoundTrip(req)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// Client is an http.Client with timeout that dials through g and follows
// redirects within one host only; a nil g gives a plain client.
func (g *Guard) Client(timeout time.Duration) *http.Client {
	if g == nil {
		return &http.Client{Timeout: timeout}
	}
	return &http.Client{Transport: g.Transport(nil), Timeout: timeout}
}

// hostPort is the host:port a proxy URL dials.
func hostPort(u *url.URL) (string, error) {
	if u.Hostname() == "" {
		return "", fmt.Errorf("proxy URL %q has no host", u.Redacted())
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "socks5": "1080"}[u.Scheme]
		if port == "" {
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}
