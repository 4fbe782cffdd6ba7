package controller

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The controller's status API shares legate serve's guard: a Host it is
// not known by (a DNS name a page rebound to its address) is refused
// before any handler runs, IP addresses and known names are served, and
// every answer carries the security headers.
func TestHTTPAPIRefusesUnknownHosts(t *testing.T) {
	h := (&httpAPI{c: &Controller{opts: Options{HTTPAddr: "127.0.0.1:8080", PublicURL: "https://legate.example.com", HTTPAllowedHosts: []string{"legate.legate-system.svc"}}}}).routes()
	for host, want := range map[string]int{
		"rebind.attacker.example:8080":  http.StatusMisdirectedRequest,
		"":                              http.StatusMisdirectedRequest,
		"127.0.0.1:8080":                http.StatusOK,
		"10.244.1.7:8080":               http.StatusOK,
		"localhost:8080":                http.StatusOK,
		"legate.example.com":            http.StatusOK,
		"legate.legate-system.svc:8080": http.StatusOK,
	} {
		r := httptest.NewRequest(http.MethodGet, "/livez", nil)
		r.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		assert.Equal(t, want, rec.Code, host)
		if want != http.StatusOK {
			assert.Contains(t, rec.Body.String(), "--http-allowed-hosts", host)
		}
		assert.Equal(t, "DENY", rec.Header().Get("X-Frame-Options"), host)
		assert.Contains(t, rec.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'", host)
	}
}
