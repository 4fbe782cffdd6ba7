// Package httpguard is the guard both homes put in front of their HTTP
// API and status page (legate serve's and legate controller's): security
// headers, a bounded body, a Host check against DNS rebinding, no
// state-changing browser requests from other origins, and optional read
// tokens. It knows neither home.
package httpguard

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// MaxRequestBody bounds every request body (the largest a home reads is
// a webhook delivery).
const MaxRequestBody = 1 << 20

// Options configure a guard.
type Options struct {
	// Hosts are the names a request's Host may carry besides an IP
	// address (Names builds them).
	Hosts map[string]bool
	// HostHint ends the refusal of an unknown Host: how the operator adds
	// a name ("add it with --http-allowed-hosts").
	HostHint string
	// Exempt is a path prefix exempt from the Host check (legate serve's
	// webhook receivers, "/hooks/": forges call them by any name, and
	// their deliveries are signed); "" exempts nothing.
	Exempt string
	// ReadTokens, when set, are the tokens every read but the probes
	// (OpenPaths) must carry; ReadTokenHint ends the refusal.
	ReadTokens    []string
	ReadTokenHint string
}

// OpenPaths are read without a token even when reads need one: the
// probes of a kubelet or a load balancer.
var OpenPaths = map[string]bool{"/healthz": true, "/readyz": true, "/livez": true}

// Handler wraps every route of an HTTP server:
//   - security headers on every answer (the status page is HTML), and
//     no caching of any;
//   - a bounded request body;
//   - the Host header must be an IP address or a known name, so a page in
//     a browser cannot reach legate through a DNS name it rebinds to
//     127.0.0.1;
//   - a state-changing call must not be a browser form post (form content
//     types) nor come from a page of another origin;
//   - with read tokens, every read but the probes carries one of them.
func Handler(next http.Handler, o Options) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		// Nothing legate answers may be cached: every answer is the state
		// of now, and with read tokens a shared cache would hand it to
		// someone without one.
		h.Set("Cache-Control", "no-store")
		r.Body = http.MaxBytesReader(w, r.Body, MaxRequestBody)

		if o.Exempt != "" && strings.HasPrefix(r.URL.Path, o.Exempt) {
			next.ServeHTTP(w, r)
			return
		}
		if !AllowedHost(r.Host, o.Hosts) {
			msg := fmt.Sprintf("host %q is not a name this legate is known by", r.Host)
			if o.HostHint != "" {
				msg += "; " + o.HostHint
			}
			writeError(w, http.StatusMisdirectedRequest, msg)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if reason := browserRequest(r); reason != "" {
				writeError(w, http.StatusForbidden, reason)
				return
			}
		} else if len(o.ReadTokens) > 0 && !OpenPaths[r.URL.Path] && !ReadAuthorized(r, o.ReadTokens) {
			h.Set("WWW-Authenticate", `Basic realm="legate", charset="UTF-8"`)
			msg := "reading needs a read token: send it as a bearer token, or as the password of basic authentication"
			if o.ReadTokenHint != "" {
				msg = o.ReadTokenHint
			}
			writeError(w, http.StatusUnauthorized, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// writeError answers {"error": msg}, as both homes' APIs do.
func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(map[string]string{"error": msg})
}

// BearerAuthorized reports whether a request carries token as its bearer
// token (and no other way: a browser's basic authentication does not
// count).
func BearerAuthorized(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && token != "" && sameToken(got, token) == 1
}

// sameToken compares a presented token with a configured one in time
// that depends on neither: both are hashed first, so not even the
// configured token's length shows (subtle.ConstantTimeCompare returns at
// once on a length mismatch). It returns 1 when they are equal.
func sameToken(got, want string) int {
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:])
}

// ReadAuthorized reports whether a request carries one of the tokens, as
// a bearer token (the CLI, Prometheus) or as the password of basic
// authentication with any user name (a browser's own prompt).
func ReadAuthorized(r *http.Request, tokens []string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		_, got, ok = r.BasicAuth()
	}
	if !ok || got == "" {
		return false
	}
	match := 0
	for _, t := range tokens {
		match |= sameToken(got, t)
	}
	return match == 1
}

// AllowedHost reports whether a Host header names legate: any IP address
// (a rebinding attack needs a DNS name) or one of the known names.
func AllowedHost(hostport string, names map[string]bool) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = normalize(host)
	if host == "" {
		return false
	}
	if net.ParseIP(host) != nil {
		return true
	}
	return names[host]
}

// Names are the names legate answers to: localhost, and the host of each
// of hosts, which may be a name, a host:port or a URL (IP addresses are
// always allowed and not listed).
func Names(hosts ...string) map[string]bool {
	names := map[string]bool{"localhost": true}
	for _, h := range hosts {
		switch {
		case strings.Contains(h, "://"):
			if u, err := url.Parse(h); err == nil {
				h = u.Hostname()
			}
		default:
			if host, _, err := net.SplitHostPort(h); err == nil {
				h = host
			}
		}
		if h = normalize(h); h != "" && net.ParseIP(h) == nil {
			names[h] = true
		}
	}
	return names
}

func normalize(host string) string {
	return strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
}

// browserRequest says why a state-changing request looks like one a page
// made a browser send, or "" when it does not.
func browserRequest(r *http.Request) string {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt == "application/x-www-form-urlencoded" || mt == "multipart/form-data" || mt == "text/plain" {
			return fmt.Sprintf("content type %q is refused on state-changing calls; send none or application/json", ct)
		}
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return fmt.Sprintf("cross-origin request from %q refused", origin)
		}
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return "cross-site request refused (Sec-Fetch-Site: " + site + ")"
	}
	return ""
}
