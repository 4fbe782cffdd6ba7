package standalone

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/legate-dev/legate/httpguard"
)

// Bounds of the HTTP server. Every answer legate gives is small (the
// largest is the node list), and every request body it reads is a webhook
// delivery (httpguard.MaxRequestBody).
const (
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

// guard wraps every route of the HTTP server with the guard both homes
// share (httpguard): webhook receivers are exempt from the Host check
// (forges call them by any name, and their deliveries are signed), and
// with read tokens every read but the health probes carries one of them.
func guard(next http.Handler, hosts map[string]bool, readTokens []string) http.Handler {
	return httpguard.Handler(next, httpguard.Options{
		Hosts: hosts, HostHint: "add it with --http-allowed-hosts", Exempt: "/hooks/",
		ReadTokens:    readTokens,
		ReadTokenHint: "reading needs the read or admin token (readTokenFile): send it as a bearer token, or as the password of basic authentication",
	})
}

// knownHosts are the names legate answers to: localhost, the name it
// listens on, the public URL's host and the configured extra names.
func knownHosts(cfg Config) map[string]bool {
	return httpguard.Names(append([]string{cfg.HTTPAddr, cfg.PublicURL}, cfg.HTTPAllowedHosts...)...)
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
