package controller

import (
	"context"
	"encoding/json"
	"errors"
	"html/template"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/legate-dev/legate/pipeline"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/xds"
)

// DefaultHTTPAddr is where the status API listens unless told otherwise.
const DefaultHTTPAddr = "127.0.0.1:8080"

// NodeView is one entry of GET /api/v1/nodes: the engine's view of the
// node and the proxies this replica serves it to.
type NodeView struct {
	revisions.NodeStatus
	Proxies []xds.ProxyStatus `json:"proxies"`
}

// httpAPI is the controller's read-only HTTP surface: probes, metrics,
// the nodes and sources as JSON and a status page. Nothing on it changes
// state (the cluster's objects are the way to do that), and it carries no
// key material: revisions name their secrets, never their content.
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
		writeJSON(w, http.StatusOK, h.nodes())
	})
	mux.HandleFunc("GET /api/v1/nodes/{node}", func(w http.ResponseWriter, r *http.Request) {
		st, ok := h.c.engine.Node(r.PathValue("node"))
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "no node " + r.PathValue("node")})
			return
		}
		writeJSON(w, http.StatusOK, NodeView{NodeStatus: st, Proxies: nonNil(h.c.xds.Proxies(st.NodeID))})
	})
	mux.HandleFunc("GET /api/v1/sources", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, h.sources())
	})
	mux.HandleFunc("GET /{$}", h.page)
	return securityHeaders(mux)
}

func (h *httpAPI) nodes() []NodeView {
	nodes := h.c.engine.Nodes()
	out := make([]NodeView, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, NodeView{NodeStatus: n, Proxies: nonNil(h.c.xds.Proxies(n.NodeID))})
	}
	return out
}

// sources are the pipeline's status of every object reconciled.
func (h *httpAPI) sources() []pipeline.Status {
	h.c.mu.Lock()
	names := make([]string, 0, len(h.c.sources)+len(h.c.drivers))
	for key := range h.c.sources {
		names = append(names, "envoyconfig/"+key.Namespace+"/"+key.Name)
	}
	for name := range h.c.drivers {
		names = append(names, name)
	}
	h.c.mu.Unlock()
	slices.Sort(names)
	out := make([]pipeline.Status, 0, len(names))
	for _, n := range names {
		out = append(out, h.c.pipeline.Status(n))
	}
	return out
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>legate controller</title>
<style>body{font:14px system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse}td,th{padding:.3em .8em;border-bottom:1px solid #ddd;text-align:left}.bad{color:#b00}</style>
</head><body><h1>legate controller</h1>
<h2>Nodes</h2>
<table><tr><th>node</th><th>state</th><th>served</th><th>commit</th><th>proxies</th><th>rejection</th></tr>
{{range .Nodes}}<tr><td>{{.NodeID}}</td><td{{if or (eq (print .State) "Rollback") (eq (print .State) "RollbackFailed")}} class="bad"{{end}}>{{.State}}</td>
<td>{{with .Published}}{{.Hash}}{{end}}</td><td>{{with .Published}}{{.Revision}}{{end}}</td><td>{{len .Proxies}}</td>
<td class="bad">{{range .History}}{{with .Taint}}{{.Message}}{{break}}{{end}}{{end}}</td></tr>
{{else}}<tr><td colspan="6">no node yet</td></tr>{{end}}</table>
<h2>Sources</h2>
<table><tr><th>source</th><th>fetched</th><th>applied</th><th>nodes</th><th>problems</th></tr>
{{range .Sources}}<tr><td>{{.Source}}</td><td>{{.Revision}}</td><td>{{.AppliedRevision}}</td><td>{{range .Nodes}}{{.}} {{end}}</td><td class="bad">{{range .Problems}}{{.}}<br>{{end}}</td></tr>
{{else}}<tr><td colspan="5">no source yet</td></tr>{{end}}</table>
</body></html>`))

func (h *httpAPI) page(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = pageTemplate.Execute(w, struct {
		Nodes   []NodeView
		Sources []pipeline.Status
	}{h.nodes(), h.sources()})
}

// securityHeaders keeps the page from being framed or running scripts.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
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
