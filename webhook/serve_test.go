package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/legate-dev/legate/pki"
)

type fixedCert struct{ cert *tls.Certificate }

func (f fixedCert) Current() (*tls.Certificate, *x509.CertPool, error) { return f.cert, nil, nil }

// serveOnLoopback runs s.Serve on a loopback port with a certificate of a
// new CA, and returns its address and a pool holding that CA.
func serveOnLoopback(t *testing.T, s *Server) (string, *x509.CertPool) {
	t.Helper()
	now := time.Now()
	ca, caIssued, err := pki.NewCA("webhook-test", 2*time.Hour, now)
	require.NoError(t, err)
	iss, err := ca.IssueServer([]string{"127.0.0.1"}, time.Hour, now)
	require.NoError(t, err)
	cert, err := tls.X509KeyPair(iss.CertPEM, iss.KeyPEM)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caIssued.CertPEM))

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, lis, fixedCert{&cert}) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return lis.Addr().String(), pool
}

// The API server keeps one connection to the webhooks and sends review
// after review on it (HTTP/1.1 through a Service, HTTP/2 to a loopback
// URL): the server must keep it open, or every Pod pays a TCP and TLS
// handshake. legate_admission_connections_total counts what it opened,
// and does count a client that does not keep its connections.
func TestServeKeepsTheAPIServersConnection(t *testing.T) {
	s := &Server{Mutator: Injector{XDSAddress: "legate-xds.legate-system.svc:18000"}, Log: logr.Discard()}
	require.NoError(t, s.Register(prometheus.NewRegistry()))
	addr, pool := serveOnLoopback(t, s)
	asks := pod(map[string]string{InjectLabel: Enabled})
	asks.Annotations = map[string]string{"legate.dev/node-id": "web"}
	body := review(t, podRequest(t, asks, false))

	send := func(c *http.Client, n int) {
		for range n {
			resp, err := c.Post("https://"+addr+MutatePodsPath, "application/json", bytes.NewReader(body))
			require.NoError(t, err)
			out, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, http.StatusOK, resp.StatusCode, string(out))
			require.Contains(t, string(out), `"patch"`)
		}
	}
	client := func(proto string, keepAlive bool) *http.Client {
		tr := &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: pool, NextProtos: []string{proto}, MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2: proto == "h2",
			DisableKeepAlives: !keepAlive,
		}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr, Timeout: 30 * time.Second}
	}

	for _, proto := range []string{"http/1.1", "h2"} {
		before := testutil.ToFloat64(s.connections)
		send(client(proto, true), 5)
		require.InDelta(t, 1, testutil.ToFloat64(s.connections)-before, 0, "%s: connections opened for 5 reviews", proto)
	}
	before := testutil.ToFloat64(s.connections)
	send(client("http/1.1", false), 3)
	require.InDelta(t, 3, testutil.ToFloat64(s.connections)-before, 0, "a client without keep-alive opens one per review")
}

// The API server's client closes an idle connection after client-go's
// idle timeout; the webhooks must not close it first, or a review sent
// just then fails and its Pod is refused (failurePolicy Fail).
func TestIdleTimeoutOutlastsTheAPIServersClient(t *testing.T) {
	client := utilnet.SetTransportDefaults(&http.Transport{})
	require.Positive(t, client.IdleConnTimeout)
	require.Greater(t, IdleTimeout, client.IdleConnTimeout)
}
