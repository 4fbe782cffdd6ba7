package engineio

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/readapi"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/statuspage"
	"github.com/legate-dev/legate/xds"
)

// The "http" reader: GET /api/v1/nodes from the real read API handler on
// loopback, the body read whole (run.sh leaves this file out of the
// engine before issue 24, which has no readapi).
func init() {
	nodesReaders = append(nodesReaders, nodesReader{name: "http", make: func(b *testing.B, e *revisions.Engine) func() error {
		api, err := readapi.New(readapi.Options{Engine: e, Proxies: noProxies{}, Sources: func() []statuspage.Source { return nil }})
		require.NoError(b, err)
		srv := httptest.NewServer(api)
		b.Cleanup(srv.Close)
		c := srv.Client()
		return func() error {
			resp, err := c.Get(srv.URL + "/api/v1/nodes")
			if err != nil {
				return err
			}
			defer func() { _ = resp.Body.Close() }()
			n, err := io.Copy(io.Discard, resp.Body)
			if err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK || n < nodes {
				return fmt.Errorf("GET /api/v1/nodes: %s, %d bytes", resp.Status, n)
			}
			return nil
		}
	}})
}

type noProxies struct{}

func (noProxies) Proxies(string) []xds.ProxyStatus { return nil }
