package git

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"golang.org/x/net/proxy"

	"github.com/legate-dev/legate/netguard"
	"github.com/legate-dev/legate/sources"
)

// go-git keeps one HTTP client per process. It is replaced by one whose
// transport guards each request by the netguard.Guard of its context (a
// source's Config.Guard) and, for those, follows no redirect to another
// host; requests without one are sent as net/http's default transport
// sends them. Every ref advertisement is bounded (maxAdvertisement).
func init() {
	c := githttp.NewClient(&http.Client{Transport: boundedAdvertisements{next: netguard.ContextTransport(nil)}})
	client.InstallProtocol("http", c)
	client.InstallProtocol("https", c)
	proxy.RegisterDialerType(guardScheme, func(u *url.URL, _ proxy.Dialer) (proxy.Dialer, error) {
		g, ok := sshGuards.Load(u.Host)
		if !ok {
			return nil, fmt.Errorf("no network guard %q", u.Host)
		}
		return guardDialer{g.(*netguard.Guard)}, nil
	})
}

// go-git dials SSH through golang.org/x/net/proxy and nothing else
// reaches its dial: a guarded SSH fetch names a "proxy" of this scheme,
// which dials through the source's guard.
const guardScheme = "legate-netguard"

var (
	sshGuards  sync.Map // id → *netguard.Guard
	sshGuardMu sync.Mutex
	sshGuardID = map[*netguard.Guard]string{}
)

// sshProxy is the go-git proxy option that dials SSH through g.
func sshProxy(g *netguard.Guard) transport.ProxyOptions {
	sshGuardMu.Lock()
	defer sshGuardMu.Unlock()
	id, ok := sshGuardID[g]
	if !ok {
		id = "g" + strconv.Itoa(len(sshGuardID))
		sshGuardID[g] = id
		sshGuards.Store(id, g)
	}
	return transport.ProxyOptions{URL: guardScheme + "://" + id}
}

type guardDialer struct{ g *netguard.Guard }

func (d guardDialer) Dial(network, addr string) (net.Conn, error) {
	return d.g.DialContext(context.Background(), network, addr)
}

func (d guardDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return d.g.DialContext(ctx, network, addr)
}

// checkGuarded refuses, for a guarded source, the transports the guard
// cannot see into: a local repository (file://, a path).
func checkGuarded(cfg Config, ep *transport.Endpoint) error {
	if cfg.Guard == nil {
		return nil
	}
	switch ep.Protocol {
	case "http", "https", "ssh":
		return nil
	}
	return fmt.Errorf("url %q: fetches over https, http or ssh only here (not %s)", sources.Redact(cfg.URL), ep.Protocol)
}
