package controller

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The controller serves the read API both homes share (readapi tests its
// guard, headers and limits): here, that its names reach the Host check,
// that the refusal names legate controller's flag, and that /readyz
// follows the caches.
func TestHTTPAPIWiresItsNamesAndReadiness(t *testing.T) {
	h := &httpAPI{reg: prometheus.NewRegistry(), c: &Controller{opts: Options{HTTPAddr: "status.local:8080", PublicURL: "https://legate.example.com", HTTPAllowedHosts: []string{"legate.legate-system.svc"}}}}
	api, err := h.routes()
	require.NoError(t, err)
	get := func(path, host string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Host = host
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, r)
		return rec
	}
	for host, want := range map[string]int{
		"rebind.attacker.example:8080":  http.StatusMisdirectedRequest,
		"status.local:8080":             http.StatusOK,
		"legate.example.com":            http.StatusOK,
		"legate.legate-system.svc:8080": http.StatusOK,
	} {
		rec := get("/livez", host)
		assert.Equal(t, want, rec.Code, host)
		if want != http.StatusOK {
			assert.Contains(t, rec.Body.String(), "legate controller's --http-allowed-hosts", host)
		}
		assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"), host)
	}

	rec := get("/readyz", "127.0.0.1")
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Contains(t, rec.Body.String(), "filling the caches")
	h.ready.Store(true)
	rec = get("/readyz", "127.0.0.1")
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "ok\n", rec.Body.String())
}
