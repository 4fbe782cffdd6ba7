package controller

import (
	"net/http"
	"time"

	"github.com/legate-dev/legate/netguard"
)

// fetchGuardHint ends every refusal of a fetch: how the operator allows
// the address.
const fetchGuardHint = "an operator may allow its network with legate controller's --fetch-allow-networks"

// forgeTimeout bounds one commit-status request.
const forgeTimeout = 30 * time.Second

// newFetchGuard is the guard of every fetch a tenant's object can point
// legate at: EnvoySources' Git and OCI URLs, the Flux artifacts they
// read, and the forge APIs commit statuses go to. Only public addresses
// and opts.FetchAllowNetworks are reached; the check runs at dial time,
// on the resolved address (netguard).
func newFetchGuard(opts Options) *netguard.Guard {
	return netguard.New(opts.FetchAllowNetworks, fetchGuardHint)
}

// fluxClient downloads Flux artifacts. They come from source-controller's
// in-cluster Service by design, so private and cluster-internal addresses
// are allowed; loopback, link-local (cloud metadata) and reserved ones
// stay refused unless allowed, as do redirects to another host.
// The download's own context bounds its time.
func (c *Controller) fluxClient() *http.Client {
	return c.fetchGuard.WithPrivate().Client(0)
}

// forgeClient posts commit statuses through the fetch guard: the forge
// address is the tenant's (spec.commitStatus.address, or the host of
// the repository URL).
func (c *Controller) forgeClient() *http.Client {
	return c.fetchGuard.Client(forgeTimeout)
}
