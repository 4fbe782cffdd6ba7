package sources

import (
	"net/http"
	"net/netip"
	"time"

	"github.com/legate-dev/legate/netguard"
)

// fetchGuardHint ends every refusal of a fetch: how the operator allows
// the address.
const fetchGuardHint = "an operator may allow its network with legate controller's --fetch-allow-networks"

// forgeTimeout bounds one commit-status request.
const forgeTimeout = 30 * time.Second

// NewFetchGuard is the guard of every fetch a tenant's object can point
// legate at: the Git and OCI URLs of its sources, the Flux artifacts they
// read (FluxClient), and the forge APIs commit statuses go to
// (ForgeClient). Only public addresses and allow are reached; the check
// runs at dial time, on the resolved address (netguard), so a name that
// resolves to a private address later is refused too.
func NewFetchGuard(allow []netip.Prefix) *netguard.Guard {
	return netguard.New(allow, fetchGuardHint)
}

// FluxClient downloads Flux artifacts through g. They come from
// source-controller's in-cluster Service by design, so private and
// cluster-internal addresses are allowed; loopback, link-local (cloud
// metadata) and reserved ones stay refused unless allowed, as do
// redirects to another host. The download's own context bounds its time.
func FluxClient(g *netguard.Guard) *http.Client {
	return g.WithPrivate().Client(0)
}

// ForgeClient posts commit statuses through g: the forge address is the
// tenant's (spec.commitStatus.address, or the host of the repository
// URL), so it is guarded like a fetch.
func ForgeClient(g *netguard.Guard) *http.Client {
	return g.Client(forgeTimeout)
}
