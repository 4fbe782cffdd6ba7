package standalone

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/statuspage"
)

func (s *Server) routes(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	live := func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	}
	mux.HandleFunc("GET /livez", live)
	mux.HandleFunc("GET /healthz", live)
	mux.HandleFunc("GET /readyz", s.serveReadiness)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /{$}", s.serveStatusPage)
	mux.HandleFunc("GET /api/v1/nodes", func(w http.ResponseWriter, _ *http.Request) {
		statuspage.WriteJSON(w, http.StatusOK, s.Nodes())
	})
	mux.HandleFunc("GET /api/v1/nodes/{node}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("node")
		st, ok := s.engine.Node(id)
		if !ok {
			statuspage.WriteJSON(w, http.StatusNotFound, apiError{Error: "no node " + quote(id)})
			return
		}
		statuspage.WriteJSON(w, http.StatusOK, s.nodeView(st, s.xds.Proxies(id), s.Sources()))
	})
	mux.HandleFunc("GET /api/v1/sources", func(w http.ResponseWriter, _ *http.Request) {
		statuspage.WriteJSON(w, http.StatusOK, s.Sources())
	})
	mux.HandleFunc("POST /api/v1/sources/{name}/fetch", s.admin(s.serveFetch))
	mux.HandleFunc("POST /api/v1/sources/{name}/suspend", s.admin(s.serveSuspend(true)))
	mux.HandleFunc("POST /api/v1/sources/{name}/resume", s.admin(s.serveSuspend(false)))
	mux.HandleFunc("GET /api/v1/nodes/{node}/revisions/{hash}", func(w http.ResponseWriter, r *http.Request) {
		v, err := s.revisionView(r.PathValue("node"), r.PathValue("hash"))
		if err != nil {
			statuspage.WriteJSON(w, http.StatusNotFound, apiError{Error: err.Error()})
			return
		}
		statuspage.WriteJSON(w, http.StatusOK, v)
	})
	mux.HandleFunc("DELETE /api/v1/nodes/{node}/revisions/{hash}/taint", s.admin(s.serveUntaint))
	mux.HandleFunc("POST /api/v1/nodes/{node}/prune", s.admin(s.servePrune))
	return mux
}

// Nodes is the content of GET /api/v1/nodes.
func (s *Server) Nodes() []statuspage.NodeView {
	nodes := s.engine.Nodes()
	srcs := s.Sources()
	out := make([]statuspage.NodeView, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, s.nodeView(n, s.xds.Proxies(n.NodeID), srcs))
	}
	return out
}

// Sources is the content of GET /api/v1/sources.
func (s *Server) Sources() []statuspage.Source {
	out := make([]statuspage.Source, 0, len(s.loops))
	for _, l := range s.loops {
		out = append(out, l.snapshot())
	}
	nodes := s.engine.Nodes()
	for i := range out {
		out[i].Rejection = proxyRejection(out[i], nodes)
	}
	return out
}

// admin guards a mutating call: the request must carry the admin token as
// a bearer token, whoever sends it (a loopback peer may be a browser page or
// another user of the machine).
func (s *Server) admin(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) != 1 {
			statuspage.WriteJSON(w, http.StatusUnauthorized, apiError{Error: "a valid admin bearer token is required (legate serve keeps it in " + AdminTokenName + " under its state directory unless --admin-token-file names one)"})
			return
		}
		next(w, r)
	}
}

type apiError struct {
	Error string `json:"error"`
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func quote(s string) string { return `"` + s + `"` }

// resolveRevision expands a unique prefix of a revision hash in node's
// history (as `legate status` prints them) to the full hash; anything else
// is returned as given.
func (s *Server) resolveRevision(node, prefix string) string {
	st, ok := s.engine.Node(node)
	if !ok || prefix == "" {
		return prefix
	}
	match := ""
	for _, r := range st.History {
		if strings.HasPrefix(r.Hash, prefix) {
			if match != "" && match != r.Hash {
				return prefix // ambiguous
			}
			match = r.Hash
		}
	}
	if match == "" {
		return prefix
	}
	return match
}

// proxyRejection says which nodes' proxies rejected the revision the
// source's newest commit made, or "".
func proxyRejection(src statuspage.Source, nodes []revisions.NodeStatus) string {
	if src.Commit == "" {
		return ""
	}
	var parts []string
	for _, n := range nodes {
		for _, h := range n.History {
			if h.Source == src.Name && h.Commit == src.Commit && h.Tainted && h.Taint != nil {
				parts = append(parts, fmt.Sprintf("node %s: %s", n.NodeID, h.Taint.Message))
				break
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "commit " + revisions.Short(src.Commit) + " rejected by proxies (rolled back): " + strings.Join(parts, "; ")
}
