package sources

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A tenant's object must not point legate at the controller's own
// loopback: both clients refuse it, and say how an operator allows it,
// until the operator does.
func TestFetchGuardClients(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(srv.Close)
	clients := map[string]func(allow []netip.Prefix) *http.Client{
		"flux":  func(allow []netip.Prefix) *http.Client { return FluxClient(NewFetchGuard(allow)) },
		"forge": func(allow []netip.Prefix) *http.Client { return ForgeClient(NewFetchGuard(allow)) },
	}
	for name, client := range clients {
		t.Run(name, func(t *testing.T) {
			resp, err := client(nil).Get(srv.URL)
			if err == nil {
				_ = resp.Body.Close()
			}
			require.Error(t, err, "loopback is refused unless allowed")
			assert.Contains(t, err.Error(), "--fetch-allow-networks")

			resp, err = client([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}).Get(srv.URL)
			require.NoError(t, err, "an allowed network is reached")
			_ = resp.Body.Close()
			assert.Equal(t, http.StatusNoContent, resp.StatusCode)
		})
	}
}
