package readapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/httpguard"
	"github.com/legate-dev/legate/readapi"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/statuspage"
)

// sharedReads are the reads both homes answer.
var sharedReads = []string{
	"/livez", "/healthz", "/readyz", "/metrics", "/",
	"/api/v1/nodes", "/api/v1/nodes/edge", "/api/v1/nodes/edge/revisions/served", "/api/v1/sources",
}

// assertGuarded checks the headers every answer carries, whatever its
// status: the page is HTML that must not run script, be framed, sniffed,
// leak its URL to a link, nor be kept by any cache.
func assertGuarded(t *testing.T, hdr http.Header, what string) {
	t.Helper()
	csp := hdr.Get("Content-Security-Policy")
	assert.Contains(t, csp, "default-src 'none'", what)
	assert.Contains(t, csp, "frame-ancestors 'none'", what)
	assert.NotContains(t, csp, "script-src", what)
	assert.Equal(t, "DENY", hdr.Get("X-Frame-Options"), what)
	assert.Equal(t, "nosniff", hdr.Get("X-Content-Type-Options"), what)
	assert.Equal(t, "no-referrer", hdr.Get("Referrer-Policy"), what)
	assert.Equal(t, "no-store", hdr.Get("Cache-Control"), what)
}

// Both homes answer the same reads, each with the same headers (refusals
// and not-found answers too), and their own routes behind the same guard.
func TestBothHomesAnswerTheSameReadsWithTheSameHeaders(t *testing.T) {
	for _, h := range homes {
		t.Run(h.name, func(t *testing.T) {
			api, _ := newAPI(t, h, nil)
			for _, path := range sharedReads {
				rec := do(api, http.MethodGet, path, "127.0.0.1:8080", nil)
				assert.Equal(t, http.StatusOK, rec.Code, "%s: %s", path, rec.Body)
				assertGuarded(t, rec.Header(), path)
			}
			method, path, _ := strings.Cut(h.own, " ")
			rec := do(api, method, path, "127.0.0.1:8080", nil)
			assert.Equal(t, http.StatusOK, rec.Code, h.own)
			assertGuarded(t, rec.Header(), h.own)

			rec = do(api, http.MethodGet, "/api/v1/nodes/nope", "127.0.0.1:8080", nil)
			assert.Equal(t, http.StatusNotFound, rec.Code)
			assert.JSONEq(t, `{"error": "no node \"nope\""}`, rec.Body.String())
			assertGuarded(t, rec.Header(), "not found")
			rec = do(api, http.MethodGet, "/api/v1/nodes/edge/revisions/ffff", "127.0.0.1:8080", nil)
			assert.Equal(t, http.StatusNotFound, rec.Code)
			assert.Contains(t, rec.Body.String(), `no revision \"ffff\" of node \"edge\"`)
			rec = do(api, http.MethodGet, "/api/v1/nodes", "rebind.attacker.example", nil)
			assert.Equal(t, http.StatusMisdirectedRequest, rec.Code)
			assertGuarded(t, rec.Header(), "refused")
		})
	}
}

// A Host the home is not known by (a DNS name a page rebound to its
// address) is refused before any handler runs, with the hint naming the
// home's own setting; IP addresses, localhost, the listen address, the
// public URL's host and the allowed hosts are served. Only legate serve's
// webhooks, which forges call by any name, are exempt.
func TestUnknownHostsAreRefusedWithTheHomesHint(t *testing.T) {
	for _, h := range homes {
		t.Run(h.name, func(t *testing.T) {
			api, _ := newAPI(t, h, nil)
			for host, want := range map[string]int{
				"rebind.attacker.example:8080": http.StatusMisdirectedRequest,
				"":                             http.StatusMisdirectedRequest,
				"127.0.0.1:8080":               http.StatusOK,
				"10.244.1.7:8080":              http.StatusOK,
				"[::1]:8080":                   http.StatusOK,
				"localhost:8080":               http.StatusOK,
				"legate.example.com":           http.StatusOK,
				"OPS.internal.:8080":           http.StatusOK,
			} {
				rec := do(api, http.MethodGet, "/api/v1/nodes", host, nil)
				assert.Equal(t, want, rec.Code, host)
				if want != http.StatusOK {
					assert.Contains(t, rec.Body.String(), "add it with "+h.name+"'s --http-allowed-hosts", host)
				}
			}
			rec := do(api, http.MethodPost, "/hooks/generic", "forge.example.com", nil)
			if h.name == "legate serve" {
				assert.Equal(t, http.StatusOK, rec.Code, "webhooks are exempt")
			} else {
				assert.Equal(t, http.StatusMisdirectedRequest, rec.Code, "nothing is exempt")
			}
		})
	}
}

// With read tokens, every read of both homes but the probes needs one
// (the refusal names the home's setting), and the home's own reads too;
// without, every read is open.
func TestReadsNeedATokenWhenConfigured(t *testing.T) {
	for _, h := range homes {
		t.Run(h.name, func(t *testing.T) {
			api, _ := newAPI(t, h, func(o *readapi.Options) { o.ReadTokens = []string{"r3ad-t0ken"} })
			open, _ := newAPI(t, h, nil)
			bearer := http.Header{"Authorization": {"Bearer r3ad-t0ken"}}
			wrong := http.Header{"Authorization": {"Bearer nope"}}
			reads := append([]string{}, sharedReads...)
			if method, path, _ := strings.Cut(h.own, " "); method == http.MethodGet {
				reads = append(reads, path)
			}
			for _, path := range reads {
				probe := httpguard.OpenPaths[path]
				rec := do(api, http.MethodGet, path, "127.0.0.1", nil)
				if probe {
					assert.Equal(t, http.StatusOK, rec.Code, "probes stay open: %s", path)
					continue
				}
				assert.Equal(t, http.StatusUnauthorized, rec.Code, path)
				assert.Contains(t, rec.Body.String(), h.name+"'s --read-token-file", path)
				assert.Contains(t, rec.Header().Get("WWW-Authenticate"), "Basic", "a browser prompts for it: %s", path)
				assertGuarded(t, rec.Header(), path)
				assert.Equal(t, http.StatusUnauthorized, do(api, http.MethodGet, path, "127.0.0.1", wrong).Code, path)
				assert.Equal(t, http.StatusOK, do(api, http.MethodGet, path, "127.0.0.1", bearer).Code, path)
				assert.Equal(t, http.StatusOK, do(open, http.MethodGet, path, "127.0.0.1", nil).Code, "no token configured: %s", path)
			}
		})
	}
}

// /readyz answers what the home says, 503 until it is ready, never cached;
// a home that says nothing is ready.
func TestReadinessIsTheHomes(t *testing.T) {
	ready := false
	api, _ := newAPI(t, homes[1], func(o *readapi.Options) {
		o.Ready = func() (bool, string) {
			if !ready {
				return false, "not ready: filling the caches"
			}
			return true, "ok"
		}
	})
	rec := do(api, http.MethodGet, "/readyz", "127.0.0.1", nil)
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "not ready: filling the caches\n", rec.Body.String())
	assertGuarded(t, rec.Header(), "/readyz")
	ready = true
	rec = do(api, http.MethodGet, "/readyz", "127.0.0.1", nil)
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "ok\n", rec.Body.String())

	silent, _ := newAPI(t, homes[0], nil)
	rec = do(silent, http.MethodGet, "/readyz", "127.0.0.1", nil)
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "ok\n", rec.Body.String())
}

// The page and the JSON views show the same nodes and sources; a home's
// orphan judgement and replica line reach them.
func TestViewsCarryTheHomesJudgement(t *testing.T) {
	api, _ := newAPI(t, homes[1], func(o *readapi.Options) {
		o.Orphaned = func(st revisions.NodeStatus) bool { return st.NodeID == "edge" }
	})
	var nodes []statuspage.NodeView
	rec := do(api, http.MethodGet, "/api/v1/nodes", "127.0.0.1", nil)
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &nodes))
	require.Len(t, nodes, 1)
	assert.True(t, nodes[0].Orphaned)
	assert.Equal(t, nodes[0].NodeID, api.Nodes()[0].NodeID, "the API's Nodes are what it serves")
	assert.True(t, api.Nodes()[0].Orphaned)

	page := do(api, http.MethodGet, "/", "127.0.0.1", nil)
	assert.Equal(t, "text/html; charset=utf-8", page.Header().Get("Content-Type"))
	assert.Contains(t, page.Body.String(), "replica legate-0, leader")
	assert.Contains(t, page.Body.String(), `data-node="edge"`)
	assert.Contains(t, page.Body.String(), `data-source="config"`)

	plain, _ := newAPI(t, homes[0], nil)
	assert.NotContains(t, do(plain, http.MethodGet, "/", "127.0.0.1", nil).Body.String(), `class="replica"`)
	assert.False(t, plain.Nodes()[0].Orphaned, "no judgement: not orphaned")
}

// New refuses options without what every read needs.
func TestNewNeedsTheEngineProxiesAndSources(t *testing.T) {
	e := newEngine(t)
	_, err := readapi.New(readapi.Options{Proxies: nil, Engine: e, Sources: oneSource})
	assert.ErrorContains(t, err, "Options.Proxies")
	_, err = readapi.New(readapi.Options{Sources: oneSource})
	assert.ErrorContains(t, err, "Options.Engine")
}

// The lists are indented for a person (curl, wget, ?pretty) and compact
// for programs, and say the same either way.
func TestListsAreIndentedForPeople(t *testing.T) {
	api, _ := newAPI(t, homes[0], nil)
	for _, path := range []string{"/api/v1/nodes", "/api/v1/sources"} {
		compact := do(api, http.MethodGet, path, "127.0.0.1:8080", http.Header{"User-Agent": {"legate/v0.1.0"}})
		curl := do(api, http.MethodGet, path, "127.0.0.1:8080", http.Header{"User-Agent": {"curl/8.5.0"}})
		asked := do(api, http.MethodGet, path+"?pretty", "127.0.0.1:8080", nil)
		declined := do(api, http.MethodGet, path+"?pretty=false", "127.0.0.1:8080", http.Header{"User-Agent": {"curl/8.5.0"}})
		for _, rec := range []*httptest.ResponseRecorder{compact, curl, asked, declined} {
			require.Equal(t, http.StatusOK, rec.Code, path)
		}
		assert.NotContains(t, compact.Body.String(), "\n  ", "%s: a program gets compact JSON", path)
		assert.NotContains(t, declined.Body.String(), "\n  ", "%s: ?pretty=false", path)
		assert.Contains(t, curl.Body.String(), "\n  ", "%s: curl gets it indented", path)
		assert.Contains(t, asked.Body.String(), "\n  ", "%s: ?pretty", path)
		assert.JSONEq(t, compact.Body.String(), curl.Body.String(), path)
	}
}
