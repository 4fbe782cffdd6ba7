package controller

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/legate-dev/legate/readapi"
	"github.com/legate-dev/legate/revisions"
	kubesrc "github.com/legate-dev/legate/sources/kube"
	"github.com/legate-dev/legate/statuspage"
)

// DefaultHTTPAddr is where the status API listens unless told otherwise.
const DefaultHTTPAddr = "127.0.0.1:8080"

// httpAPI is the controller's read-only HTTP surface: probes, metrics,
// the nodes, sources and revisions as JSON and a status page, the read API
// both homes serve (readapi), plus the replica view. Nothing on it changes
// state (the cluster's objects are the way to do that), and it carries no
// key material: revisions name their secrets, never their content.
type httpAPI struct {
	c     *Controller
	reg   *prometheus.Registry
	ready atomic.Bool
	// readTokens, when set, are the tokens every read but the probes must
	// carry (core.Tuning.ReadTokens).
	readTokens []string
}

// routes are the read API both homes serve (readapi), with the
// controller's replica view mounted beside it.
func (h *httpAPI) routes() (*readapi.API, error) {
	o := h.c.opts
	return readapi.New(readapi.Options{
		Engine: h.c.core.Engine(), Proxies: h.c.core.XDS(), Sources: h.sources, Orphaned: h.orphaned,
		Ready: func() (bool, string) {
			if !h.ready.Load() {
				return false, "not ready: restoring the published revisions and filling the caches"
			}
			return true, "ok"
		},
		Metrics: prometheus.Gatherers{h.reg, crmetrics.Registry}, MetricsRegisterer: h.reg,
		Replica:          h.replica,
		Hosts:            append([]string{o.HTTPAddr, o.PublicURL}, o.HTTPAllowedHosts...),
		AllowedHostsFlag: "legate controller's --http-allowed-hosts",
		ReadTokens:       h.readTokens,
		ReadTokenName:    "the read token (legate controller's --read-token-file)",
		Routes: func(mux *http.ServeMux) {
			mux.HandleFunc("GET /api/v1/replica", func(w http.ResponseWriter, r *http.Request) {
				statuspage.WriteJSON(w, http.StatusOK, h.c.replicaView(r.Context()))
			})
		},
		Log: h.c.log,
	})
}

// orphaned says that no object renders a node any more (its EnvoyConfig
// or source deleted), once the caches have synced: before that no object
// has been reconciled yet.
func (h *httpAPI) orphaned(st revisions.NodeStatus) bool {
	return h.ready.Load() && len(st.History) > 0 && h.c.core.Pipeline().Owner(st.NodeID) == ""
}

// sources are the status of every object reconciled, in the shape both
// homes show: the pipeline's part, and the kind of object.
func (h *httpAPI) sources() []statuspage.Source {
	refs := h.c.sourceRefs()
	out := make([]statuspage.Source, 0, len(refs))
	for _, r := range refs {
		src := statuspage.SourceOf(h.c.core.Pipeline().Status(r.String()))
		src.Kind = kubesrc.KindOf(r)
		out = append(out, src)
	}
	return out
}

// replica is the page's line on this replica, with leader election.
func (h *httpAPI) replica(r *http.Request) string {
	if !h.c.opts.LeaderElect {
		return ""
	}
	v := h.c.replicaView(r.Context())
	return fmt.Sprintf("replica %s, %s (the Lease holder is %s), serving %d xDS streams", v.Replica, v.Role, cmp.Or(v.LeaseHolder, "nobody"), v.Proxies)
}

// serve serves the API on lis until ctx ends.
func (h *httpAPI) serve(ctx context.Context, lis net.Listener) error {
	api, err := h.routes()
	if err != nil {
		return err
	}
	return readapi.Serve(ctx, readapi.NewServer(api, readapi.Timeouts{}), lis)
}
