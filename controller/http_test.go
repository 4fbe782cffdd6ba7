package controller

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/core"
	"github.com/legate-dev/legate/revisions/boltstore"
	"github.com/legate-dev/legate/sds"
)

// The controller serves the read API both homes share (readapi tests its
// guard, headers and limits): here, that its names reach the Host check,
// that the refusal names legate controller's flag, and that /readyz
// follows the caches.
func TestHTTPAPIWiresItsNamesAndReadiness(t *testing.T) {
	h := &httpAPI{reg: prometheus.NewRegistry(), c: &Controller{core: newCore(t), opts: Options{HTTPAddr: "status.local:8080", PublicURL: "https://legate.example.com", HTTPAllowedHosts: []string{"legate.legate-system.svc"}}}}
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

// newCore is a core over a store of its own, for the read API to read.
func newCore(t *testing.T) *core.Core {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	c, err := core.New(core.Options{Store: st, Secrets: sds.Files{}})
	require.NoError(t, err)
	return c
}

// With --read-token-file, every read but the probes needs the token, as
// in legate serve, and the refusal names legate controller's flag.
func TestHTTPAPIReadToken(t *testing.T) {
	file := filepath.Join(t.TempDir(), "read-token")
	require.NoError(t, os.WriteFile(file, []byte("s3cret\n"), 0o600))
	tokens, err := core.Tuning{ReadTokenFile: file}.ReadTokens()
	require.NoError(t, err)
	h := &httpAPI{reg: prometheus.NewRegistry(), readTokens: tokens, c: &Controller{core: newCore(t), opts: Options{HTTPAddr: "127.0.0.1:8080"}}}
	api, err := h.routes()
	require.NoError(t, err)
	get := func(path, token string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Host = "127.0.0.1:8080"
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, r)
		return rec
	}
	for _, path := range []string{"/api/v1/nodes", "/api/v1/revisions", "/metrics", "/"} {
		rec := get(path, "")
		assert.Equal(t, http.StatusUnauthorized, rec.Code, path)
		assert.Contains(t, rec.Body.String(), "legate controller's --read-token-file", path)
		assert.NotContains(t, rec.Body.String(), "s3cret", path)
		assert.Equal(t, http.StatusUnauthorized, get(path, "wrong").Code, path)
	}
	assert.Equal(t, http.StatusOK, get("/api/v1/nodes", "s3cret").Code)
	assert.Equal(t, http.StatusOK, get("/livez", "").Code, "the probes stay open")

	_, err = core.Tuning{ReadTokenFile: filepath.Join(t.TempDir(), "missing")}.ReadTokens()
	assert.ErrorContains(t, err, "readTokenFile (--read-token-file)")
}
