package standalone

import (
	"cmp"
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/httpguard"
	"github.com/legate-dev/legate/readapi"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/sources/hooks"
	"github.com/legate-dev/legate/statuspage"
)

// newHTTPServer builds the HTTP server: the read API and page both homes
// serve (readapi), with legate serve's own endpoints mounted beside them:
// the token-protected writes and the push webhooks. With a read token,
// the admin token reads too.
func (s *Server) newHTTPServer(reg *prometheus.Registry, secrets hooks.Secrets, t readapi.Timeouts) (*http.Server, error) {
	var readTokens []string
	if rt, err := s.cfg.ReadToken(); err != nil {
		return nil, err
	} else if rt != "" {
		readTokens = []string{rt, s.token}
	}
	forges := map[string]forge.Provider{}
	for _, sc := range s.cfg.Sources {
		if sc.Forge != nil {
			forges[sc.Name] = sc.Forge.Provider
		}
	}
	api, err := readapi.New(readapi.Options{
		Engine: s.engine, Proxies: s.xds, Sources: s.sourceStatus, Orphaned: s.orphaned,
		Ready:   s.readiness,
		Metrics: reg, MetricsRegisterer: reg,
		Forges:           forges,
		Hosts:            append([]string{s.cfg.HTTPAddr, s.cfg.PublicURL}, s.cfg.HTTPAllowedHosts...),
		AllowedHostsFlag: "legate serve's --http-allowed-hosts (httpAllowedHosts)",
		ReadTokens:       readTokens,
		ReadTokenName:    "the read or admin token (legate serve's --read-token-file, readTokenFile)",
		HostCheckExempt:  "/hooks/",
		Routes: func(mux *http.ServeMux) {
			s.writeRoutes(mux)
			s.hookRoutes(mux, secrets)
		},
		Log: s.log,
	})
	if err != nil {
		return nil, err
	}
	s.api = api
	return readapi.NewServer(api, t), nil
}

// writeRoutes are the calls that change state, each behind the admin
// token.
func (s *Server) writeRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/v1/sources/{name}/fetch", s.admin(s.serveFetch))
	mux.HandleFunc("POST /api/v1/sources/{name}/suspend", s.admin(s.serveSuspend(true)))
	mux.HandleFunc("POST /api/v1/sources/{name}/resume", s.admin(s.serveSuspend(false)))
	mux.HandleFunc("DELETE /api/v1/nodes/{node}/revisions/{hash}/taint", s.admin(s.serveUntaint))
	mux.HandleFunc("POST /api/v1/nodes/{node}/prune", s.admin(s.servePrune))
	mux.HandleFunc("POST /api/v1/nodes/{node}/rollout/{command}", s.admin(s.serveRolloutCommand))
}

// Nodes is the content of GET /api/v1/nodes.
func (s *Server) Nodes() []statuspage.NodeView { return s.api.Nodes() }

// Sources is the content of GET /api/v1/sources.
func (s *Server) Sources() []statuspage.Source { return s.api.Sources() }

// sourceStatus is every source loop's status.
func (s *Server) sourceStatus() []statuspage.Source {
	out := make([]statuspage.Source, 0, len(s.loops))
	for _, l := range s.loops {
		out = append(out, l.snapshot())
	}
	return out
}

// orphaned reports whether no configured source renders the node any more:
// the source of its newest revision is gone from the configuration, or its
// last good render no longer has the node and no other source took it.
func (s *Server) orphaned(st revisions.NodeStatus) bool {
	if len(st.History) == 0 {
		return false
	}
	src := st.History[0].Source
	if s.pipeline.Owner(st.NodeID) != "" {
		return false
	}
	if s.loop(src) == nil {
		return src != "" || len(s.loops) > 0
	}
	return s.pipeline.Dropped(src, st.NodeID)
}

// readiness answers GET /readyz: ready once every source has finished its
// first fetch attempt, with one line per source saying where it stands: a
// probe that fails says which source it waits for, and one that passes
// still shows a source whose fetch failed.
func (s *Server) readiness() (ready bool, text string) {
	ready = true
	var lines []string
	for _, l := range s.loops {
		l.mu.Lock()
		tried := l.tried
		l.mu.Unlock()
		st := l.snapshot()
		fetched := cmp.Or(st.Revision, "nothing")
		switch {
		case st.Suspended:
			lines = append(lines, fmt.Sprintf("source %s: suspended", st.Name))
		case !tried:
			ready = false
			lines = append(lines, fmt.Sprintf("source %s: waiting for its first fetch", st.Name))
		case st.LastError != "":
			lines = append(lines, fmt.Sprintf("source %s: fetched %s; error: %s", st.Name, fetched, st.LastError))
		default:
			lines = append(lines, fmt.Sprintf("source %s: fetched %s", st.Name, fetched))
		}
	}
	switch {
	case !ready:
		return false, "not ready: waiting for the first fetch of every source\n" + strings.Join(lines, "\n")
	case len(lines) == 0:
		return true, "ok: no sources configured"
	}
	return true, "ok\n" + strings.Join(lines, "\n")
}

// admin guards a mutating call: the request must carry the admin token as
// a bearer token, whoever sends it (a loopback peer may be a browser page or
// another user of the machine).
func (s *Server) admin(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !httpguard.BearerAuthorized(r, s.token) {
			readapi.WriteError(w, http.StatusUnauthorized, "a valid admin bearer token is required (legate serve keeps it in "+serveconfig.AdminTokenName+" under its state directory unless --admin-token-file names one)")
			return
		}
		next(w, r)
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func quote(s string) string { return `"` + s + `"` }
