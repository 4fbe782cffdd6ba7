package git

import (
	"fmt"
	"net/http"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/legate-dev/legate/netguard"
	"github.com/legate-dev/legate/sources"
)

// go-git keeps one HTTP client per process. It is replaced by one whose
// transport guards each request by the netguard.Guard of its context (a
// source's Config.Guard) and, for those, follows no redirect to another
// host; requests without one are sent as net/http's default transport
// sends them. Every ref advertisement is bounded (maxAdvertisement; over
// SSH see sshbound.go).
func init() {
	c := githttp.NewClient(&http.Client{Transport: boundedAdvertisements{next: netguard.ContextTransport(nil)}})
	client.InstallProtocol("http", c)
	client.InstallProtocol("https", c)
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
