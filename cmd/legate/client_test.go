package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

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
