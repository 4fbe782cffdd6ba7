package oci

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/netguard"
)

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// A guarded source does not reach a registry on a refused address: no
// request arrives, and the error says why without a dial error.
func TestGuardedFetchRefusesLoopbackRegistry(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, h := range []string{host, strings.Replace(host, "127.0.0.1", "localhost", 1)} {
		src := newSource(t, Config{URL: "oci://" + h + "/cfg/edge", Insecure: true, Guard: netguard.New(nil, "allow it with --fetch-allow-networks")})
		_, err := src.Fetch(context.Background())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "resolves to a loopback address, which legate does not fetch from: allow it with --fetch-allow-networks")
		assert.NotContains(t, err.Error(), "connection refused")
	}
	assert.Zero(t, hits.Load())
}

// Allowed, a guarded source follows a registry's redirect of a blob to
// another host (its storage) but not of anything else.
func TestGuardedFetchFollowsOnlyBlobRedirects(t *testing.T) {
	reg := startRegistry(t, "", "")
	reg.push(t, "cfg/edge", fluxArtifact(t, "main@sha1:"+sha1, entry{name: "envoy/listeners.yaml", body: "listeners: 1"}), "latest")
	storage := "http://" + strings.Replace(reg.host, "127.0.0.1", "localhost", 1)
	front := func(redirect func(*http.Request) bool) string {
		target, err := url.Parse("http://" + reg.host)
		require.NoError(t, err)
		proxy := httputil.NewSingleHostReverseProxy(target)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if redirect(r) {
				http.Redirect(w, r, storage+r.URL.RequestURI(), http.StatusTemporaryRedirect)
				return
			}
			proxy.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}
	blobs := front(func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/blobs/") })
	src := newSource(t, Config{URL: "oci://" + blobs + "/cfg/edge", Path: "envoy", Insecure: true, Guard: netguard.New(loopback, "")})
	res, err := src.Fetch(context.Background())
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"listeners.yaml": "listeners: 1"}, readAll(t, res.Files))
	assert.Positive(t, reg.blobReads.Load())

	manifests := front(func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/manifests/") })
	src = newSource(t, Config{URL: "oci://" + manifests + "/cfg/edge", Insecure: true, Guard: netguard.New(loopback, "")})
	_, err = src.Fetch(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "to localhost refused: legate follows redirects within one host only")
}
