package standalone

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/readapi"
	"github.com/legate-dev/legate/serveconfig"
)

// xDS beyond loopback without mutual TLS is refused before anything
// listens, unless the operator opted in by name.
func TestXDSBeyondLoopbackNeedsMutualTLSOrOptIn(t *testing.T) {
	cfg := serveconfig.Config{
		XDSAddr: "0.0.0.0:0", HTTPAddr: "127.0.0.1:0", StateDir: t.TempDir(),
		Sources: []serveconfig.SourceConfig{{Name: "config", Git: &serveconfig.GitSource{URL: newLocalRepo(t).dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}
	s, err := New(cfg, Options{})
	require.Error(t, err)
	assert.Nil(t, s)
	assert.Contains(t, err.Error(), "--xds-insecure")
	assert.Contains(t, err.Error(), "--xds-client-ca")

	tlsOnly := cfg
	tlsOnly.XDSTLS = &serveconfig.XDSTLSConfig{CertFile: "c", KeyFile: "k"}
	require.ErrorContains(t, tlsOnly.CheckXDSExposure(), "TLS without client certificates")
	mtls := cfg
	mtls.XDSTLS = &serveconfig.XDSTLSConfig{CertFile: "c", KeyFile: "k", ClientCAFile: "ca"}
	assert.NoError(t, mtls.CheckXDSExposure())
	optIn := cfg
	optIn.XDSInsecure = true
	assert.NoError(t, optIn.CheckXDSExposure())
}

// A mutating call needs the token whoever sends it: a loopback peer may be
// a browser page or another user of the machine.
func TestAdminNeedsTheTokenFromLoopbackToo(t *testing.T) {
	s := &Server{token: "s3cret"}
	called := 0
	h := s.admin(func(http.ResponseWriter, *http.Request) { called++ })
	for name, auth := range map[string]string{"none": "", "wrong": "Bearer nope", "not bearer": "s3cret", "basic": "Basic czNjcmV0"} {
		req := httptest.NewRequest(http.MethodDelete, "/api/v1/nodes/n/revisions/h/taint", nil)
		req.RemoteAddr = "127.0.0.1:5555"
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		h(rec, req)
		assert.Equal(t, http.StatusUnauthorized, rec.Code, name)
		assert.NotContains(t, rec.Body.String(), "s3cret", "the token is never echoed")
	}
	assert.Zero(t, called, "no refused call reached the handler")

	req := httptest.NewRequest(http.MethodDelete, "/api/v1/nodes/n/revisions/h/taint", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	h(httptest.NewRecorder(), req)
	assert.Equal(t, 1, called)
}

// A running server refuses a rebinding page's attempt to clear a taint,
// answers the names it is configured with (listen address, public URL,
// allowed hosts), keeps the page's headers and runs the server both homes
// share (readapi tests the guard, headers and limits themselves).
func TestServedRoutesAreGuarded(t *testing.T) {
	repo := newLocalRepo(t)
	repo.commit("a")
	s := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), DefaultNode: "edge",
		PublicURL: "https://Legate.Example.com/x", HTTPAllowedHosts: []string{"a.b"},
		Sources: []serveconfig.SourceConfig{{Name: "config", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}, Options{})
	runServer(t, s)
	req, err := http.NewRequest(http.MethodDelete, "http://"+s.HTTPAddr()+"/api/v1/nodes/edge/revisions/abc/taint", nil)
	require.NoError(t, err)
	req.Host = "rebind.attacker.example"
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode)

	resp, err = http.Get("http://" + s.HTTPAddr() + "/")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	assert.Equal(t, readapi.MaxHeaderBytes, s.http.MaxHeaderBytes)
	assert.Equal(t, readapi.DefaultTimeouts.Read, s.http.ReadTimeout)

	for host, want := range map[string]int{
		"legate.example.com": http.StatusOK, "a.b:8080": http.StatusOK, "localhost": http.StatusOK,
		"rebind.attacker.example": http.StatusMisdirectedRequest,
	} {
		req, err := http.NewRequest(http.MethodGet, "http://"+s.HTTPAddr()+"/api/v1/nodes", nil)
		require.NoError(t, err)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		assert.Equal(t, want, resp.StatusCode, host)
		if want != http.StatusOK {
			assert.Contains(t, string(body), "legate serve's --http-allowed-hosts", host)
		}
	}
}

// With a read token, every read but the probes needs it (or the admin
// token), as a bearer token or a basic-auth password; without one, reads
// stay open.
func TestReadsNeedTheReadTokenWhenConfigured(t *testing.T) {
	repo := newLocalRepo(t)
	repo.commit("a")
	tokenFile := filepath.Join(t.TempDir(), "read-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("r3ad-t0ken-value\n"), 0o600))
	s := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), DefaultNode: "edge", ReadTokenFile: tokenFile,
		Sources: []serveconfig.SourceConfig{{Name: "config", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}, Options{})
	runServer(t, s)
	// get answers the status code and the WWW-Authenticate header.
	get := func(path string, auth func(*http.Request)) (int, string) {
		req, err := http.NewRequest(http.MethodGet, "http://"+s.HTTPAddr()+path, nil)
		require.NoError(t, err)
		if auth != nil {
			auth(req)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
	}
	code := func(path string, auth func(*http.Request)) int {
		c, _ := get(path, auth)
		return c
	}
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	// Which routes need it and how it may be sent is readapi's: here, the
	// file's token and the admin token read, nothing else does.
	path := "/api/v1/nodes"
	c, challenge := get(path, nil)
	assert.Equal(t, http.StatusUnauthorized, c, path)
	assert.Contains(t, challenge, "Basic", "a browser prompts for it")
	assert.Equal(t, http.StatusUnauthorized, code(path, bearer("wrong")), path)
	assert.Equal(t, http.StatusOK, code(path, bearer("r3ad-t0ken-value")), "the file's token, trimmed")
	assert.Equal(t, http.StatusOK, code(path, bearer(s.token)), "the admin token reads too")
	assert.Equal(t, http.StatusOK, code("/healthz", nil), "probes stay open")

	// The read token does not grant writes.
	req, err := http.NewRequest(http.MethodPost, "http://"+s.HTTPAddr()+"/api/v1/sources/config/fetch", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer r3ad-t0ken-value")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	// Without a read token configured, reads are open.
	open := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), DefaultNode: "edge",
		Sources: []serveconfig.SourceConfig{{Name: "config", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}, Options{})
	runServer(t, open)
	resp, err = http.Get("http://" + open.HTTPAddr() + "/api/v1/nodes")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}
