package readapi

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/utils/clock"

	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/httpguard"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/statuspage"
	"github.com/legate-dev/legate/xds"
)

// Engine is what the read API reads of the revision engine
// (*revisions.Engine). It is called from every request's goroutine, so it
// must be safe for concurrent use.
type Engine interface {
	Nodes() []revisions.NodeStatus
	Node(id string) (revisions.NodeStatus, bool)
	Revision(node, hash string) (rev revisions.Revision, served, ok bool)
}

// Rollouts is what an Engine may also answer (*revisions.Engine does): the
// progressive rollouts, under way or last, for GET /api/v1/rollouts and
// GET /api/v1/nodes/{node}/rollout.
type Rollouts interface {
	Rollouts() []revisions.RolloutView
	Rollout(node string) (revisions.RolloutView, bool)
}

// Proxies lists the proxies connected for a node (*xds.Server); safe for
// concurrent use.
type Proxies interface {
	Proxies(node string) []xds.ProxyStatus
}

// ConnectedNodes is what a Proxies may also answer (*xds.Server does): the
// node IDs that open streams ask for, so that the API lists those nothing
// configures. Safe for concurrent use.
type ConnectedNodes interface {
	ConnectedNodes() []string
}

// maxUnconfigured bounds the unconfigured node IDs listed: proxies choose
// their node IDs, and a page of typos says enough.
const maxUnconfigured = 20

// Options are what a home gives the read API. Engine, Proxies and Sources
// are required.
type Options struct {
	Engine  Engine
	Proxies Proxies
	// Sources are the home's sources in the shape both homes show; the
	// API adds the proxies' rejections.
	Sources func() []statuspage.Source
	// Orphaned says that no source renders a node any more (each home
	// judges it its own way); nil: never.
	Orphaned func(revisions.NodeStatus) bool
	// Ready answers GET /readyz: whether the home is ready and the text
	// of the answer ("ok", or what it waits for); nil: always ready.
	Ready func() (ready bool, text string)
	// Metrics is what GET /metrics gathers; MetricsRegisterer, when set,
	// counts the handler's own errors (promhttp_metric_handler_*).
	Metrics           prometheus.Gatherer
	MetricsRegisterer prometheus.Registerer
	// Forges maps a source name to its forge, for commit links on the page.
	Forges map[string]forge.Provider
	// Replica says on the page which replica answers and its role; nil or
	// "": nothing is said.
	Replica func(*http.Request) string

	// Hosts are the names requests may carry in their Host besides IP
	// addresses and localhost: the listen address, the public URL and the
	// allowed hosts, in any form httpguard.Names takes.
	Hosts []string
	// AllowedHostsFlag names the setting that adds a host, for the
	// refusal of an unknown one ("legate serve's --http-allowed-hosts").
	AllowedHostsFlag string
	// ReadTokens, when set, are the tokens every read but the probes must
	// carry; ReadTokenName says, in the refusal, which tokens they are and
	// where an operator sets them ("the read token (legate controller's
	// --read-token-file)").
	ReadTokens    []string
	ReadTokenName string
	// HostCheckExempt is a path prefix exempt from the Host check (legate
	// serve's webhook receivers, "/hooks/": forges call them by any name and
	// sign their deliveries).
	HostCheckExempt string
	// Routes mounts the home's own endpoints beside the shared ones; they
	// sit behind the same guard.
	Routes func(*http.ServeMux)

	// Clock dates the page's relative times; nil: the wall clock.
	Clock clock.PassiveClock
	Log   logr.Logger
}

// API is the read API and status page of one home; it is an http.Handler
// with the guard in front.
type API struct {
	o       Options
	handler http.Handler
}

// New builds the read API of a home.
func New(o Options) (*API, error) {
	switch {
	case o.Engine == nil:
		return nil, errors.New("readapi: Options.Engine is required")
	case o.Proxies == nil:
		return nil, errors.New("readapi: Options.Proxies is required")
	case o.Sources == nil:
		return nil, errors.New("readapi: Options.Sources is required")
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Metrics == nil {
		o.Metrics = prometheus.NewRegistry()
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	a := &API{o: o}
	a.handler = httpguard.Handler(a.routes(), httpguard.Options{
		Hosts:         httpguard.Names(o.Hosts...),
		HostHint:      "add it with " + o.AllowedHostsFlag,
		Exempt:        o.HostCheckExempt,
		ReadTokens:    o.ReadTokens,
		ReadTokenHint: "reading needs " + o.ReadTokenName + ": send it as a bearer token, or as the password of basic authentication",
	})
	return a, nil
}

// ServeHTTP serves a request through the guard.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.handler.ServeHTTP(w, r) }

func (a *API) routes() http.Handler {
	mux := http.NewServeMux()
	live := func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) }
	mux.HandleFunc("GET /livez", live)
	mux.HandleFunc("GET /healthz", live)
	mux.HandleFunc("GET /readyz", a.serveReadiness)
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.o.Metrics, promhttp.HandlerOpts{Registry: a.o.MetricsRegisterer}))
	mux.HandleFunc("GET /{$}", a.servePage)
	mux.HandleFunc("GET /api/v1/nodes", func(w http.ResponseWriter, r *http.Request) {
		statuspage.WriteJSONIndented(w, http.StatusOK, a.Nodes(), forPeople(r))
	})
	mux.HandleFunc("GET /api/v1/nodes/{node}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("node")
		st, ok := a.o.Engine.Node(id)
		if !ok {
			for _, v := range a.unconfigured(a.o.Engine.Nodes()) {
				if v.NodeID == id {
					statuspage.WriteJSON(w, http.StatusOK, v)
					return
				}
			}
			WriteError(w, http.StatusNotFound, "no node "+quote(id))
			return
		}
		statuspage.WriteJSON(w, http.StatusOK, a.nodeView(st, a.sources(a.o.Engine.Nodes())))
	})
	mux.HandleFunc("GET /api/v1/nodes/{node}/revisions/{hash}", func(w http.ResponseWriter, r *http.Request) {
		v, err := RevisionOf(a.o.Engine, r.PathValue("node"), r.PathValue("hash"))
		if err != nil {
			WriteError(w, http.StatusNotFound, err.Error())
			return
		}
		statuspage.WriteJSON(w, http.StatusOK, v)
	})
	mux.HandleFunc("GET /api/v1/sources", func(w http.ResponseWriter, r *http.Request) {
		statuspage.WriteJSONIndented(w, http.StatusOK, a.Sources(), forPeople(r))
	})
	if ro, ok := a.o.Engine.(Rollouts); ok {
		mux.HandleFunc("GET /api/v1/rollouts", func(w http.ResponseWriter, r *http.Request) {
			views := ro.Rollouts()
			slices.SortFunc(views, func(a, b revisions.RolloutView) int { return strings.Compare(a.Node, b.Node) })
			if views == nil {
				views = []revisions.RolloutView{}
			}
			statuspage.WriteJSONIndented(w, http.StatusOK, views, forPeople(r))
		})
		mux.HandleFunc("GET /api/v1/nodes/{node}/rollout", func(w http.ResponseWriter, r *http.Request) {
			v, ok := ro.Rollout(r.PathValue("node"))
			if !ok {
				WriteError(w, http.StatusNotFound, "node "+quote(r.PathValue("node"))+" has no rollout")
				return
			}
			statuspage.WriteJSONIndented(w, http.StatusOK, v, forPeople(r))
		})
	}
	if a.o.Routes != nil {
		a.o.Routes(mux)
	}
	return mux
}

// forPeople reports whether a JSON answer to r is indented: for curl and
// wget, which print it to a person, and for ?pretty (any value but
// "false"); programs get it compact. Indenting the node list of a large
// fleet costs more than encoding it (the Kubernetes API server decides the
// same way, by the same User-Agents).
func forPeople(r *http.Request) bool {
	if p, ok := r.URL.Query()["pretty"]; ok {
		return len(p) == 0 || p[0] != "false"
	}
	ua := r.UserAgent()
	return strings.HasPrefix(ua, "curl/") || strings.HasPrefix(ua, "Wget/")
}

// Nodes is the content of GET /api/v1/nodes.
func (a *API) Nodes() []statuspage.NodeView {
	nodes := a.o.Engine.Nodes()
	return a.nodes(nodes, a.sources(nodes))
}

// nodes is the node views of nodes, one engine reading: a request reads
// the engine once (1 000 node statuses are the bulk of its cost).
func (a *API) nodes(nodes []revisions.NodeStatus, srcs []statuspage.Source) []statuspage.NodeView {
	out := make([]statuspage.NodeView, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, a.nodeView(n, srcs))
	}
	return append(out, a.unconfigured(nodes)...)
}

// unconfigured lists, state Unconfigured, the node IDs that connected
// proxies ask for and no node of the engine has, each with the closest
// configured IDs: a typo in a bootstrap shows where people look, not only
// in /metrics. The read API shows every node of the engine (the operator's
// view, behind the read token in a cluster), so naming the others' IDs as
// hints reveals nothing a reader does not already see.
func (a *API) unconfigured(nodes []revisions.NodeStatus) []statuspage.NodeView {
	cn, ok := a.o.Proxies.(ConnectedNodes)
	if !ok {
		return nil
	}
	known := make(map[string]bool, len(nodes))
	ids := make([]string, 0, len(nodes))
	for _, n := range nodes {
		known[n.NodeID] = true
		ids = append(ids, n.NodeID)
	}
	var out []statuspage.NodeView
	connected := cn.ConnectedNodes()
	slices.Sort(connected)
	for _, id := range connected {
		if known[id] {
			continue
		}
		if len(out) == maxUnconfigured {
			break
		}
		out = append(out, statuspage.UnconfiguredView(id, a.o.Proxies.Proxies(id), ids))
	}
	return out
}

func (a *API) nodeView(st revisions.NodeStatus, srcs []statuspage.Source) statuspage.NodeView {
	orphaned := a.o.Orphaned != nil && a.o.Orphaned(st)
	return statuspage.NewNodeView(st, a.o.Proxies.Proxies(st.NodeID), srcs, orphaned)
}

// Sources is the content of GET /api/v1/sources: the home's sources, each
// with the proxies' rejection of its newest commit.
func (a *API) Sources() []statuspage.Source {
	return a.sources(a.o.Engine.Nodes())
}

func (a *API) sources(nodes []revisions.NodeStatus) []statuspage.Source {
	out := a.o.Sources()
	if out == nil {
		out = []statuspage.Source{}
	}
	for i := range out {
		if out[i].Rejection == "" {
			out[i].Rejection = proxyRejection(out[i], nodes)
		}
	}
	return out
}

// serveReadiness is GET /readyz: 200 when the home is ready, 503 before;
// the home's text says what it waits for.
func (a *API) serveReadiness(w http.ResponseWriter, _ *http.Request) {
	ready, text := true, "ok"
	if a.o.Ready != nil {
		ready, text = a.o.Ready()
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_, _ = w.Write([]byte(strings.TrimRight(text, "\n") + "\n"))
}

// servePage is GET /: the status page.
func (a *API) servePage(w http.ResponseWriter, r *http.Request) {
	nodes := a.o.Engine.Nodes()
	srcs := a.sources(nodes)
	page := statuspage.Page{Nodes: a.nodes(nodes, srcs), Sources: srcs, Forges: a.o.Forges, Now: a.o.Clock.Now()}
	if ro, ok := a.o.Engine.(Rollouts); ok {
		page.Rollouts = ro.Rollouts()
	}
	if a.o.Replica != nil {
		page.Replica = a.o.Replica(r)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := page.Write(w); err != nil {
		a.o.Log.Error(err, "render the status page")
	}
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

// WriteError answers {"error": msg}, never cached, as every endpoint of
// both homes does.
func WriteError(w http.ResponseWriter, code int, msg string) {
	statuspage.WriteJSON(w, code, map[string]string{"error": msg})
}

func quote(s string) string { return `"` + s + `"` }
