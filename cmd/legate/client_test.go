package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
)

// A --server pointed at a gRPC server (legate's xDS port) says so and
// where the read API is, instead of printing the HTTP/2 frame it got.
func TestServerAtTheXDSPort(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	f := clientFlags{server: lis.Addr().String()}
	c, err := f.client()
	require.NoError(t, err)
	_, err = c.nodes(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is legate's xDS port")
	assert.Contains(t, err.Error(), "the read API listens on the --http-addr")
	assert.NotContains(t, err.Error(), `\x00`, "no raw frame bytes")
}

// A port where nothing listens is still "cannot reach".
func TestServerNotListening(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())
	f := clientFlags{server: addr}
	c, err := f.client()
	require.NoError(t, err)
	_, err = c.nodes(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot reach legate serve")
}

// The read API (an HTTP/1.1 server) is not taken for the xDS port.
func TestReadAPIDoesNotSpeakHTTP2(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	assert.False(t, speaksHTTP2(context.Background(), srv.URL))
}

// A server that is reached but has not answered when reconcile's
// --timeout runs out is not "cannot reach": the message names the flag
// that waits longer. The server acknowledges the fetch and never reports
// it done, as legate serve does while a large repository is fetched.
func TestReconcileTimeoutNamesTheFlagNotAnUnreachableServer(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/sources/cfg/fetch", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"source": "cfg", "status": "fetch requested", "requestedAt": time.Now()})
	})
	mux.HandleFunc("GET /api/v1/sources", func(w http.ResponseWriter, r *http.Request) {
		// The fetch is still running: hold the answer until the client
		// gives up.
		<-r.Context().Done()
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	tok := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tok, []byte("t"), 0o600))

	_, err := runLegate(t, "reconcile", "cfg", "--server", srv.URL, "--token-file", tok, "--timeout", "300ms")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "cannot reach")
	assert.Contains(t, err.Error(), "no answer from legate at "+srv.URL+" in time")
	assert.Contains(t, err.Error(), "--timeout 300ms waits longer; legate status shows where source cfg stands")
}
