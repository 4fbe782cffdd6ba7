package readapi_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/legate-dev/legate/readapi"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/boltstore"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/statuspage"
	"github.com/legate-dev/legate/xds"
)

// newEngine is a real, restored engine on a bolt store in a temporary
// directory, publishing to nothing.
func newEngine(t *testing.T) *revisions.Engine {
	t.Helper()
	st, err := boltstore.Open(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	e, err := revisions.New(revisions.Options{
		Store:      st,
		Publisher:  revisions.PublisherFunc(func(string, revisions.Publication) error { return nil }),
		Registerer: prometheus.NewRegistry(),
	})
	require.NoError(t, err)
	require.NoError(t, e.Restore(context.Background()))
	return e
}

// applyCluster applies a revision of node holding one cluster, with hash.
func applyCluster(t *testing.T, e *revisions.Engine, node, hash, commit string) {
	t.Helper()
	body, err := proto.Marshal(&clusterv3.Cluster{Name: "backend"})
	require.NoError(t, err)
	cfg := &render.NodeConfig{NodeID: node, Hash: hash, Types: map[string]render.TypeSet{
		resourcev3.ClusterType: {Hash: hash, Resources: []render.Resource{{Name: "backend", Body: body}}},
	}}
	require.NoError(t, e.Apply(context.Background(), node, cfg, sources.Origin{Kind: sources.KindGit, Source: "config", Commit: commit}))
}

// home is one home's configuration of the read API, as each home wires it.
type home struct {
	name string
	opts func(e readapi.Engine, x readapi.Proxies) readapi.Options
	// own is a route of the home's own, mounted through Options.Routes.
	own string
}

// homes are the two homes' configurations: legate serve's (webhooks
// exempt from the Host check, its own writes) and legate controller's
// (the replica view, a replica line on the page).
var homes = []home{
	{
		name: "legate serve", own: "POST /api/v1/sources/config/fetch",
		opts: func(e readapi.Engine, x readapi.Proxies) readapi.Options {
			return readapi.Options{
				Engine: e, Proxies: x, Sources: oneSource,
				Hosts:            []string{"127.0.0.1:8080", "https://legate.example.com/status", "ops.internal"},
				AllowedHostsFlag: "legate serve's --http-allowed-hosts",
				ReadTokenName:    "the read or admin token (legate serve's --read-token-file)",
				HostCheckExempt:  "/hooks/",
				Routes: func(mux *http.ServeMux) {
					mux.HandleFunc("POST /api/v1/sources/{name}/fetch", echoBody)
					mux.HandleFunc("/hooks/generic", echoBody)
				},
			}
		},
	},
	{
		name: "legate controller", own: "GET /api/v1/replica",
		opts: func(e readapi.Engine, x readapi.Proxies) readapi.Options {
			return readapi.Options{
				Engine: e, Proxies: x, Sources: oneSource,
				Hosts:            []string{"127.0.0.1:8080", "https://legate.example.com", "ops.internal"},
				AllowedHostsFlag: "legate controller's --http-allowed-hosts",
				ReadTokenName:    "the read token (legate controller's --read-token-file)",
				Replica:          func(*http.Request) string { return "replica legate-0, leader" },
				Routes: func(mux *http.ServeMux) {
					mux.HandleFunc("GET /api/v1/replica", func(w http.ResponseWriter, _ *http.Request) {
						statuspage.WriteJSON(w, http.StatusOK, map[string]string{"replica": "legate-0"})
					})
				},
			}
		},
	},
}

func oneSource() []statuspage.Source {
	return []statuspage.Source{{Name: "config", Kind: "git", URL: "https://git.example.com/org/config.git"}}
}

// echoBody answers the size of the request body, or 413 when the guard's
// bound cut it.
func echoBody(w http.ResponseWriter, r *http.Request) {
	n, err := io.Copy(io.Discard, r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	_, _ = io.WriteString(w, strings.Repeat("x", int(n%10)))
}

// newAPI is h's read API over a real engine with one node ("edge") and a
// real xDS server (no proxy connected).
func newAPI(t *testing.T, h home, tweak func(*readapi.Options)) (*readapi.API, *revisions.Engine) {
	t.Helper()
	e := newEngine(t)
	applyCluster(t, e, "edge", strings.Repeat("cd", 32), strings.Repeat("1", 40))
	x, err := xds.New(xds.Options{})
	require.NoError(t, err)
	o := h.opts(e, x)
	if tweak != nil {
		tweak(&o)
	}
	api, err := readapi.New(o)
	require.NoError(t, err)
	return api, e
}

// do serves one request through h with host as its Host header.
func do(h http.Handler, method, path, host string, header http.Header) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	r.Host = host
	for k, v := range header {
		r.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// serve runs h in the server both homes use, on a loopback port, until
// the test ends.
func serve(t *testing.T, h http.Handler, to readapi.Timeouts) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- readapi.Serve(ctx, readapi.NewServer(h, to), lis) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return lis.Addr().String()
}
