package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/legate-dev/legate/httpguard"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/statuspage"
)

// DefaultHTTPAddr is where the status API listens unless told otherwise.
const DefaultHTTPAddr = "127.0.0.1:8080"

// httpAPI is the controller's read-only HTTP surface: probes, metrics,
// the nodes and sources as JSON and a status page. Nothing on it changes
// state (the cluster's objects are the way to do that), and it carries no
// key material: revisions name their secrets, never their content. It
// sits behind legate serve's guard (httpguard): a Host it is not known by
// is refused, so a page a browser loads cannot read it through a DNS name
// rebound to its address.
type httpAPI struct {
	c     *Controller
	reg   *prometheus.Registry
	ready atomic.Bool
}

func (h *httpAPI) routes() http.Handler {
	mux := http.NewServeMux()
	live := func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) }
	mux.HandleFunc("GET /livez", live)
	mux.HandleFunc("GET /healthz", live)
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if !h.ready.Load() {
			http.Error(w, "not ready: restoring the published revisions and filling the caches", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(prometheus.Gatherers{h.reg, crmetrics.Registry}, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /api/v1/nodes", func(w http.ResponseWriter, _ *http.Request) {
		statuspage.WriteJSON(w, http.StatusOK, h.nodes(h.sources()))
	})
	mux.HandleFunc("GET /api/v1/nodes/{node}", func(w http.ResponseWriter, r *http.Request) {
		st, ok := h.c.engine.Node(r.PathValue("node"))
		if !ok {
			statuspage.WriteJSON(w, http.StatusNotFound, map[string]string{"error": "no node " + r.PathValue("node")})
			return
		}
		statuspage.WriteJSON(w, http.StatusOK, h.nodeView(st, h.sources()))
	})
	mux.HandleFunc("GET /api/v1/replica", func(w http.ResponseWriter, r *http.Request) {
		statuspage.WriteJSON(w, http.StatusOK, h.c.replicaView(r.Context()))
	})
	mux.HandleFunc("GET /api/v1/sources", func(w http.ResponseWriter, _ *http.Request) {
		statuspage.WriteJSON(w, http.StatusOK, h.sources())
	})
	mux.HandleFunc("GET /{$}", h.page)
	return httpguard.Handler(mux, httpguard.Options{
		Hosts:    httpguard.Names(append([]string{h.c.opts.HTTPAddr, h.c.opts.PublicURL}, h.c.opts.HTTPAllowedHosts...)...),
		HostHint: "add it with legate controller's --http-allowed-hosts",
	})
}

// nodes are the views of every node the engine serves.
func (h *httpAPI) nodes(srcs []statuspage.Source) []statuspage.NodeView {
	nodes := h.c.engine.Nodes()
	out := make([]statuspage.NodeView, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, h.nodeView(n, srcs))
	}
	return out
}

// nodeView is a node as both homes show it. A node no object renders any
// more (its EnvoyConfig or source deleted) is orphaned, once the caches
// have synced: before that no object has been reconciled yet.
func (h *httpAPI) nodeView(st revisions.NodeStatus, srcs []statuspage.Source) statuspage.NodeView {
	orphaned := h.ready.Load() && len(st.History) > 0 && h.c.pipeline.Owner(st.NodeID) == ""
	return statuspage.NewNodeView(st, h.c.xds.Proxies(st.NodeID), srcs, orphaned)
}

// sources are the status of every object reconciled, in the shape both
// homes show: the pipeline's part, and the kind of object.
func (h *httpAPI) sources() []statuspage.Source {
	refs := h.c.sourceRefs()
	out := make([]statuspage.Source, 0, len(refs))
	for _, r := range refs {
		src := statuspage.SourceOf(h.c.pipeline.Status(r.String()))
		src.Kind = refKindName(r)
		out = append(out, src)
	}
	return out
}

// page is GET /: the status page both homes share.
func (h *httpAPI) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	srcs := h.sources()
	page := statuspage.Page{Nodes: h.nodes(srcs), Sources: srcs, Now: time.Now()}
	if h.c.opts.LeaderElect {
		v := h.c.replicaView(r.Context())
		page.Replica = fmt.Sprintf("replica %s, %s (the Lease holder is %s), serving %d xDS streams", v.Replica, v.Role, cmp.Or(v.LeaseHolder, "nobody"), v.Proxies)
	}
	if err := page.Write(w); err != nil {
		h.c.log.Error(err, "render the status page")
	}
}

// serveHTTP serves the API on lis until ctx ends.
func (h *httpAPI) serve(ctx context.Context, lis net.Listener) error {
	srv := &http.Server{
		Handler: h.routes(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 16 << 10,
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
