package netguard

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// server is a loopback HTTP server counting the requests it got.
func server(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if h != nil {
			h(w, r)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func get(t *testing.T, c *http.Client, u string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	require.NoError(t, err)
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), nil
}

// A loopback server is not reached, by address or by a name that
// resolves to it (the check is on the dialled address, not the URL).
func TestGuardRefusesLoopbackAtDial(t *testing.T) {
	srv, hits := server(t, nil)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	c := New(nil, "allow it with --fetch-allow-networks").Client(5 * time.Second)
	for _, u := range []string{srv.URL, "http://localhost:" + strconv.Itoa(port) + "/x"} {
		_, err := get(t, c, u)
		var refused *RefusedError
		require.ErrorAs(t, err, &refused, u)
		assert.Equal(t, Loopback, refused.Kind)
		assert.Contains(t, err.Error(), "resolves to a loopback address, which legate does not fetch from: allow it with --fetch-allow-networks")
	}
	assert.Zero(t, hits.Load(), "no request reached the server")

	allowed := New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}, "").Client(5 * time.Second)
	body, err := get(t, allowed, srv.URL)
	require.NoError(t, err)
	assert.Equal(t, "ok", body)
}

// A refused address reads the same whether its port is open or closed: no
// port scan through error texts.
func TestRefusalsDoNotTellPortsApart(t *testing.T) {
	srv, _ := server(t, nil)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedAddr := closed.Addr().String()
	require.NoError(t, closed.Close())

	c := New(nil, "").Client(5 * time.Second)
	_, open := get(t, c, srv.URL+"/a")
	_, shut := get(t, c, "http://"+closedAddr+"/a")
	require.Error(t, open)
	require.Error(t, shut)
	strip := func(err error, u string) string { return strings.ReplaceAll(err.Error(), u, "URL") }
	assert.Equal(t, strip(open, srv.URL+"/a"), strip(shut, "http://"+closedAddr+"/a"))
	assert.NotContains(t, shut.Error(), "connection refused")
	// The metadata address is never dialled: the answer is immediate,
	// not a timeout that would tell a filtered port.
	_, meta := get(t, c, "http://169.254.169.254/latest/meta-data/")
	require.Error(t, meta)
	assert.Contains(t, meta.Error(), "169.254.169.254 resolves to a link-local (where cloud metadata services answer) address")
}

// Redirects are followed within one host only, unless the rule allows
// the other host.
func TestRedirectsStayOnTheirHost(t *testing.T) {
	target, hits := server(t, nil)
	port := strconv.Itoa(target.Listener.Addr().(*net.TCPAddr).Port)
	redirect, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/same" {
			http.Redirect(w, r, target.URL+"/there", http.StatusFound) // 127.0.0.1 → 127.0.0.1
			return
		}
		http.Redirect(w, r, "http://localhost:"+port+"/there", http.StatusFound)
	})
	g := New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}, "")

	_, err := get(t, g.Client(5*time.Second), redirect.URL+"/other")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "redirect from 127.0.0.1 to localhost refused")
	assert.Zero(t, hits.Load())

	body, err := get(t, g.Client(5*time.Second), redirect.URL+"/same")
	require.NoError(t, err)
	assert.Equal(t, "ok", body)

	blobs := &http.Client{Transport: g.Transport(func(next *http.Request) bool { return next.URL.Hostname() == "localhost" })}
	body, err = get(t, blobs, redirect.URL+"/other")
	require.NoError(t, err)
	assert.Equal(t, "ok", body)
}

// The context transport guards only the requests whose context carries a
// guard.
func TestContextTransport(t *testing.T) {
	srv, hits := server(t, nil)
	c := &http.Client{Transport: ContextTransport(nil)}
	body, err := get(t, c, srv.URL)
	require.NoError(t, err)
	assert.Equal(t, "ok", body)

	req, err := http.NewRequestWithContext(NewContext(context.Background(), New(nil, "")), http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	resp, err := c.Do(req)
	if err == nil {
		_ = resp.Body.Close()
	}
	var refused *RefusedError
	assert.ErrorAs(t, err, &refused)
	assert.Equal(t, int32(1), hits.Load(), "the guarded request did not reuse the unguarded connection")
}

// Through the environment's proxy, the target host is checked before the
// request leaves, and the proxy itself is dialled whatever its address.
func TestProxiedRequests(t *testing.T) {
	proxy, hits := server(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "via proxy "+r.URL.Host) })
	pu, err := url.Parse(proxy.URL)
	require.NoError(t, err)
	tr := New(nil, "").Transport(nil).(*transport)
	tr.proxy = http.ProxyURL(pu)
	c := &http.Client{Transport: tr}

	body, err := get(t, c, "http://93.184.215.14/artifact.tgz")
	require.NoError(t, err)
	assert.Equal(t, "via proxy 93.184.215.14", body)

	_, err = get(t, c, "http://10.0.0.1/artifact.tgz")
	var refused *RefusedError
	require.ErrorAs(t, err, &refused)
	assert.Equal(t, Private, refused.Kind)
	assert.Equal(t, int32(1), hits.Load())
}
