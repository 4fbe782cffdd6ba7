package forge

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/netguard"
)

// A commit status whose forge address is internal is not posted when the
// home guards its fetches (legate controller): every provider's client
// dials through the guard, the server sees nothing, and the error says
// why without a dial error.
func TestGuardedReportersDoNotReachInternalAddresses(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	client := netguard.New(nil, "allow it with --fetch-allow-networks").Client(5 * time.Second)
	token := func(context.Context) (string, error) { return "t0ken", nil }
	st := Status{Commit: strings.Repeat("a", 40), State: StatePending, Context: "legate/edge", Description: "waiting"}
	for _, p := range []Provider{ProviderGitea, ProviderGitHub, ProviderGitLab} {
		base := srv.URL
		if p == ProviderGitHub {
			base += "/api/v3/"
		}
		rep, err := New(p, Config{BaseURL: base, Repository: "team/envoy", Token: token, HTTPClient: client})
		if err != nil {
			assert.Contains(t, err.Error(), "resolves to a loopback address", p)
			continue
		}
		err = rep.Post(context.Background(), st)
		require.Error(t, err, p)
		assert.Contains(t, err.Error(), "resolves to a loopback address, which legate does not fetch from", p)
		assert.NotContains(t, err.Error(), "connection refused", p)
		assert.NotContains(t, err.Error(), "t0ken", p)
	}
	assert.Zero(t, hits.Load(), "the internal server saw no request")
}
