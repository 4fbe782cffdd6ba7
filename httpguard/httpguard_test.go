package httpguard

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The guard answers a DNS-rebinding page (a Host legate is not known by)
// and a browser form post before any handler runs, and marks every answer
// with the security headers.
func TestGuardRefusesRebindingAndBrowserPosts(t *testing.T) {
	called := 0
	h := Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { called++ }), Options{
		Hosts: Names("127.0.0.1:8080", "https://legate.example.com", "ops.internal"), HostHint: "add it with --http-allowed-hosts", Exempt: "/hooks/",
	})
	type req struct {
		method, path, host string
		headers            map[string]string
		want               int
	}
	for name, tc := range map[string]req{
		"rebinding GET":       {http.MethodGet, "/api/v1/nodes", "evil.example:8080", nil, http.StatusMisdirectedRequest},
		"rebinding DELETE":    {http.MethodDelete, "/api/v1/nodes/n/revisions/h/taint", "evil.example", nil, http.StatusMisdirectedRequest},
		"form post":           {http.MethodPost, "/api/v1/sources/s/fetch", "127.0.0.1:8080", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, http.StatusForbidden},
		"multipart post":      {http.MethodPost, "/api/v1/sources/s/fetch", "127.0.0.1:8080", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, http.StatusForbidden},
		"text/plain post":     {http.MethodPost, "/api/v1/sources/s/fetch", "127.0.0.1:8080", map[string]string{"Content-Type": "text/plain"}, http.StatusForbidden},
		"cross-origin post":   {http.MethodPost, "/api/v1/sources/s/fetch", "127.0.0.1:8080", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		"cross-site fetch":    {http.MethodDelete, "/api/v1/nodes/n/revisions/h/taint", "localhost:8080", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		"empty host":          {http.MethodGet, "/api/v1/nodes", "", nil, http.StatusMisdirectedRequest},
		"loopback IP":         {http.MethodGet, "/api/v1/nodes", "127.0.0.1:8080", nil, http.StatusOK},
		"LAN IP":              {http.MethodGet, "/", "10.1.2.3:8080", nil, http.StatusOK},
		"localhost":           {http.MethodGet, "/", "localhost:8080", nil, http.StatusOK},
		"public URL host":     {http.MethodGet, "/", "legate.example.com", nil, http.StatusOK},
		"allowed host":        {http.MethodGet, "/", "OPS.internal.", nil, http.StatusOK},
		"CLI call":            {http.MethodDelete, "/api/v1/nodes/n/revisions/h/taint", "127.0.0.1:8080", nil, http.StatusOK},
		"JSON post":           {http.MethodPost, "/api/v1/sources/s/fetch", "127.0.0.1:8080", map[string]string{"Content-Type": "application/json"}, http.StatusOK},
		"same-origin post":    {http.MethodPost, "/api/v1/sources/s/fetch", "127.0.0.1:8080", map[string]string{"Origin": "http://127.0.0.1:8080"}, http.StatusOK},
		"webhook by any name": {http.MethodPost, "/hooks/gitea", "forge-facing.example", map[string]string{"Content-Type": "application/json"}, http.StatusOK},
	} {
		called = 0
		r := httptest.NewRequest(tc.method, tc.path, nil)
		r.Host = tc.host
		for k, v := range tc.headers {
			r.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		assert.Equal(t, tc.want, rec.Code, name)
		if tc.want == http.StatusMisdirectedRequest {
			assert.Contains(t, rec.Body.String(), "add it with --http-allowed-hosts", name)
		}
		assert.Equal(t, tc.want == http.StatusOK, called == 1, "%s: handler reached", name)
		assert.Equal(t, "DENY", rec.Header().Get("X-Frame-Options"), name)
		assert.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"), name)
		assert.Contains(t, rec.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'", name)
	}
}

// Names keeps the host of names, host:port pairs and URLs, never an IP
// address (every one is allowed).
func TestNames(t *testing.T) {
	got := Names("status.local:8080", "https://Legate.Example.com/x", "a.b", "10.0.0.1", "[::1]:80", "", ":8080", "OPS.internal.")
	assert.Equal(t, map[string]bool{"localhost": true, "status.local": true, "legate.example.com": true, "a.b": true, "ops.internal": true}, got)
}

// With read tokens, every read but the probes carries one, as a bearer
// token or a basic-auth password.
func TestReadTokens(t *testing.T) {
	h := Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), Options{ReadTokens: []string{"r3ad"}, ReadTokenHint: "send the read token"})
	for name, tc := range map[string]struct {
		path, auth string
		want       int
	}{
		"none":        {"/api/v1/nodes", "", http.StatusUnauthorized},
		"wrong":       {"/api/v1/nodes", "Bearer nope", http.StatusUnauthorized},
		"bearer":      {"/api/v1/nodes", "Bearer r3ad", http.StatusOK},
		"basic":       {"/", "Basic b3BzOnIzYWQ=", http.StatusOK},
		"probe":       {"/readyz", "", http.StatusOK},
		"not bearer":  {"/metrics", "r3ad", http.StatusUnauthorized},
		"empty basic": {"/", "Basic b3BzOg==", http.StatusUnauthorized},
	} {
		r := httptest.NewRequest(http.MethodGet, tc.path, nil)
		r.Host = "127.0.0.1"
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		assert.Equal(t, tc.want, rec.Code, name)
		if tc.want == http.StatusUnauthorized {
			assert.Contains(t, rec.Body.String(), "send the read token", name)
			assert.Contains(t, rec.Header().Get("WWW-Authenticate"), "Basic", name)
		}
	}
}

// Only a bearer token equal to the configured one authorizes, and an
// unset token authorizes nobody (not even a request sending none).
func TestBearerAuthorized(t *testing.T) {
	for name, tc := range map[string]struct {
		token, auth string
		want        bool
	}{
		"match":        {"s3cret", "Bearer s3cret", true},
		"wrong":        {"s3cret", "Bearer nope", false},
		"prefix":       {"s3cret", "Bearer s3c", false},
		"longer":       {"s3cret", "Bearer s3cret2", false},
		"same length":  {"s3cret", "Bearer s3crex", false},
		"not bearer":   {"s3cret", "s3cret", false},
		"basic":        {"s3cret", "Basic b3BzOnMzY3JldA==", false},
		"none":         {"s3cret", "", false},
		"unset token":  {"", "Bearer ", false},
		"unset, empty": {"", "", false},
	} {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		assert.Equal(t, tc.want, BearerAuthorized(r, tc.token), name)
	}
}
