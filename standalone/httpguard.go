package standalone

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/legate-dev/legate/statuspage"
)

// Bounds of the HTTP server. Every answer legate gives is small (the
// largest is the node list), and every request body it reads is a webhook
// delivery.
const (
	maxRequestBody    = 1 << 20
	maxHeaderBytes    = 64 << 10
	httpReadTimeout   = 30 * time.Second
	httpWriteTimeout  = 30 * time.Second
	httpIdleTimeout   = 60 * time.Second
	httpHeaderTimeout = 10 * time.Second
)

// httpTimeouts are the server's timeouts; tests shorten them.
type httpTimeouts struct {
	header, read, write, idle time.Duration
}

var defaultHTTPTimeouts = httpTimeouts{header: httpHeaderTimeout, read: httpReadTimeout, write: httpWriteTimeout, idle: httpIdleTimeout}

func newHTTPServer(h http.Handler, t httpTimeouts) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.header,
		ReadTimeout:       t.read,
		WriteTimeout:      t.write,
		IdleTimeout:       t.idle,
		MaxHeaderBytes:    maxHeaderBytes,
	}
}

// guard wraps every route of the HTTP server:
//   - security headers on every answer (the status page is HTML);
//   - a bounded request body;
//   - the Host header must be an IP address or a name legate is known by,
//     so a page in a browser cannot reach legate through a DNS name it
//     rebinds to 127.0.0.1 (webhook receivers are exempt: forges call them
//     by any name, and their deliveries are signed);
//   - a state-changing call must not be a browser form post (form content
//     types) nor come from a page of another origin;
//   - with read tokens, every read but the health probes carries one of
//     them (see readAuthorized).
func guard(next http.Handler, hosts map[string]bool, readTokens []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		r.Body = http.MaxBytesReader(w, r.Body, maxRequestBody)

		if strings.HasPrefix(r.URL.Path, "/hooks/") {
			next.ServeHTTP(w, r)
			return
		}
		if !allowedHost(r.Host, hosts) {
			statuspage.WriteJSON(w, http.StatusMisdirectedRequest, apiError{Error: fmt.Sprintf("host %q is not a name this legate is known by; add it with --http-allowed-hosts", r.Host)})
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if reason := browserRequest(r); reason != "" {
				statuspage.WriteJSON(w, http.StatusForbidden, apiError{Error: reason})
				return
			}
		} else if len(readTokens) > 0 && !openPaths[r.URL.Path] && !readAuthorized(r, readTokens) {
			h.Set("WWW-Authenticate", `Basic realm="legate", charset="UTF-8"`)
			statuspage.WriteJSON(w, http.StatusUnauthorized, apiError{Error: "reading needs the read or admin token (readTokenFile): send it as a bearer token, or as the password of basic authentication"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// openPaths are read without a token even when reads need one: the
// probes of a kubelet or a load balancer.
var openPaths = map[string]bool{"/healthz": true, "/readyz": true, "/livez": true}

// readAuthorized reports whether a read carries one of the tokens, as a
// bearer token (the CLI, Prometheus) or as the password of basic
// authentication with any user name (a browser's own prompt).
func readAuthorized(r *http.Request, tokens []string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		_, got, ok = r.BasicAuth()
	}
	if !ok || got == "" {
		return false
	}
	match := 0
	for _, t := range tokens {
		match |= subtle.ConstantTimeCompare([]byte(got), []byte(t))
	}
	return match == 1
}

// allowedHost reports whether a Host header names legate: any IP address
// (a rebinding attack needs a DNS name) or one of the known names.
func allowedHost(hostport string, names map[string]bool) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" {
		return false
	}
	if net.ParseIP(host) != nil {
		return true
	}
	return names[host]
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

// knownHosts are the names legate answers to: localhost, the name it
// listens on, the public URL's host and the configured extra names.
func knownHosts(cfg Config) map[string]bool {
	names := map[string]bool{"localhost": true}
	add := func(h string) {
		if h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), "."); h != "" && net.ParseIP(h) == nil {
			names[h] = true
		}
	}
	if h, _, err := net.SplitHostPort(cfg.HTTPAddr); err == nil {
		add(h)
	}
	if u, err := url.Parse(cfg.PublicURL); err == nil && cfg.PublicURL != "" {
		add(u.Hostname())
	}
	for _, h := range cfg.HTTPAllowedHosts {
		add(h)
	}
	return names
}

// AdminTokenName is the file under the state directory that holds the
// admin token legate serve made when none was configured.
const AdminTokenName = "admin-token"

// adminToken returns the bearer token of mutating calls: the configured
// file's, or the one legate keeps in its state directory, made on the
// first start (random, readable by its owner only).
// readToken returns the token reads must carry, or "" when reads are
// open (no readTokenFile).
func readToken(cfg Config) (string, error) {
	if cfg.ReadTokenFile == "" {
		return "", nil
	}
	data, err := os.ReadFile(cfg.ReadTokenFile)
	if err != nil {
		return "", fmt.Errorf("read the read token file: %w", err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("read token file %s is empty", cfg.ReadTokenFile)
	}
	return token, nil
}

func adminToken(cfg Config) (token, path string, err error) {
	path = cfg.AdminTokenFile
	if path == "" {
		path = filepath.Join(cfg.StateDir, AdminTokenName)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			if err := writeNewToken(path); err != nil {
				return "", "", err
			}
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("read admin token file: %w", err)
	}
	token = strings.TrimSpace(string(data))
	if token == "" {
		return "", "", fmt.Errorf("admin token file %s is empty", path)
	}
	return token, path, nil
}

func writeNewToken(path string) error {
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return fmt.Errorf("make an admin token: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("make an admin token: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("make an admin token: %w", err)
	}
	if _, err := f.WriteString(hex.EncodeToString(buf) + "\n"); err != nil {
		_ = f.Close()
		return fmt.Errorf("make an admin token: %w", err)
	}
	return f.Close()
}
