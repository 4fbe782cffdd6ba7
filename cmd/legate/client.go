package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/readapi"
	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/statuspage"
)

// clientFlags are the flags of the commands that talk to a running legate
// serve: where it is and, for the mutating ones, its admin token.
type clientFlags struct {
	server   string
	tokens   tokenFlags
	mutating bool
}

// defaultServer is --server's default: $LEGATE_SERVER, else legate
// serve's default --http-addr.
func defaultServer() string {
	if v := os.Getenv("LEGATE_SERVER"); v != "" {
		return v
	}
	return serveconfig.DefaultHTTPAddr
}

func (f *clientFlags) bind(fl *pflag.FlagSet, mutating bool) {
	fl.StringVar(&f.server, "server", defaultServer(), "legate serve's HTTP address: host:port (as --http-addr takes it) or a URL ($LEGATE_SERVER)")
	f.tokens.bind(fl)
	f.mutating = mutating
}

// serverURL turns --server into a base URL: "host:port", ":port" and
// "localhost:8080" get http://; URLs are kept.
func serverURL(server string) (string, error) {
	s := strings.TrimSpace(server)
	if s == "" {
		return "", errors.New("--server is empty: give legate serve's host:port or URL")
	}
	if !strings.Contains(s, "://") {
		if strings.HasPrefix(s, ":") {
			s = "127.0.0.1" + s
		}
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("--server %q: want host:port or an http(s):// URL", server)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// client talks to one legate serve.
type client struct {
	base   string
	http   *http.Client
	tokens *tokenFlags
}

func (f *clientFlags) client() (*client, error) {
	base, err := serverURL(f.server)
	if err != nil {
		return nil, err
	}
	return &client{base: base, http: &http.Client{Timeout: 15 * time.Second}, tokens: &f.tokens}, nil
}

// apiErr is an error answer of the API, said for a person.
type apiErr struct {
	code int
	msg  string
}

func (e *apiErr) Error() string { return e.msg }

// do sends one request; a non-nil body is JSON, admin adds the token. The
// answer is decoded into out unless out is nil.
func (c *client) do(ctx context.Context, method, path string, admin bool, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		return err
	}
	switch {
	case admin:
		tok, err := c.tokens.token()
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	case c.tokens.explicit() || isLoopback(req.URL.Hostname()):
		// Reads need a token when legate serve has a read token; the admin
		// token is accepted too. The one found in the state directory is
		// only sent to a legate on this machine.
		if tok, err := c.tokens.token(); err == nil {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		// The caller's deadline (reconcile --timeout) ran out while the
		// server was answering: it was reached, so "cannot reach" would
		// send the user looking for a server that is running.
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fmt.Errorf("no answer from legate at %s in time: %w", c.base, ctxErr)
		}
		if speaksHTTP2(ctx, c.base) {
			return fmt.Errorf("%s is legate's xDS port (it answered in gRPC/HTTP/2): the read API listens on the --http-addr of legate serve or legate controller (%s by default); point --server there", c.base, serveconfig.DefaultHTTPAddr)
		}
		return fmt.Errorf("cannot reach legate serve at %s (is it running? --server sets its HTTP address): %w", c.base, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("read the answer of %s: %w", c.base, err)
	}
	if resp.StatusCode >= 300 {
		return readableError(resp.StatusCode, body)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s did not answer like legate serve (%s %s): %w", c.base, method, path, err)
	}
	return nil
}

// readableError turns an API error answer into one line: the API's own
// message, and what to do for the common codes.
func readableError(code int, body []byte) error {
	var e struct {
		Error string `json:"error"`
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	switch code {
	case http.StatusUnauthorized:
		msg = "legate serve refused the call without a valid token: " + msg + " (--token-file, $LEGATE_TOKEN or --state-dir give it)"
	case http.StatusForbidden:
		msg = "legate serve refused the call: " + msg
	}
	return &apiErr{code: code, msg: msg}
}

func (c *client) nodes(ctx context.Context) ([]statuspage.NodeView, error) {
	var out []statuspage.NodeView
	return out, c.do(ctx, http.MethodGet, "/api/v1/nodes", false, &out)
}

func (c *client) node(ctx context.Context, id string) (statuspage.NodeView, error) {
	var out statuspage.NodeView
	return out, c.do(ctx, http.MethodGet, "/api/v1/nodes/"+url.PathEscape(id), false, &out)
}

func (c *client) sources(ctx context.Context) ([]statuspage.Source, error) {
	var out []statuspage.Source
	return out, c.do(ctx, http.MethodGet, "/api/v1/sources", false, &out)
}

// replica is what a legate controller replica says of itself; nil from a
// legate serve, which has no replicas.
func (c *client) replica(ctx context.Context) (*controller.ReplicaView, error) {
	var out controller.ReplicaView
	err := c.do(ctx, http.MethodGet, "/api/v1/replica", false, &out)
	var ae *apiErr
	if errors.As(err, &ae) && ae.code == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *client) revision(ctx context.Context, node, hash string) (readapi.RevisionView, error) {
	var out readapi.RevisionView
	return out, c.do(ctx, http.MethodGet, "/api/v1/nodes/"+url.PathEscape(node)+"/revisions/"+url.PathEscape(hash), false, &out)
}

// completeNodes completes node IDs from the server named by --server.
func completeNodes(f *clientFlags) cobra.CompletionFunc {
	return completeFrom(f, func(ctx context.Context, c *client) ([]string, error) {
		nodes, err := c.nodes(ctx)
		out := make([]string, 0, len(nodes))
		for _, n := range nodes {
			out = append(out, n.NodeID)
		}
		return out, err
	})
}

// completeSources completes source names from the server.
func completeSources(f *clientFlags) cobra.CompletionFunc {
	return completeFrom(f, func(ctx context.Context, c *client) ([]string, error) {
		srcs, err := c.sources(ctx)
		out := make([]string, 0, len(srcs))
		for _, s := range srcs {
			out = append(out, s.Name)
		}
		return out, err
	})
}

// completeFrom completes the first argument with the names list asks the
// server for; a server it cannot reach completes nothing.
func completeFrom(f *clientFlags, list func(context.Context, *client) ([]string, error)) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := f.client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names, err := list(cmd.Context(), c)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// printJSONOrYAML writes v as indented JSON or as YAML.
func printJSONOrYAML(w io.Writer, format string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		if data, err = jsonToYAML(data); err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

func jsonToYAML(data []byte) ([]byte, error) { return yaml.JSONToYAML(data) }

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// speaksHTTP2 reports whether the server at base answers the HTTP/2
// connection preface with a SETTINGS frame, as a gRPC server (legate's xDS
// port) does and an HTTP/1.1 server (the read API) does not. It is asked
// only after a request failed, to say what --server points at: whether
// the failed request saw the gRPC server's bytes depends on timing.
func speaksHTTP2(ctx context.Context, base string) bool {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return false
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	if _, err := conn.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")); err != nil {
		return false
	}
	var header [9]byte // length (3 bytes), type, flags, stream (4 bytes)
	if _, err := io.ReadFull(conn, header[:]); err != nil {
		return false
	}
	return header[3] == 0x04 && header[5]|header[6]|header[7]|header[8] == 0
}
