package readapi_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/httpguard"
	"github.com/legate-dev/legate/readapi"
)

// Both homes run the same server: the same timeouts and header bound.
func TestBothHomesRunTheSameServer(t *testing.T) {
	srv := readapi.NewServer(http.NotFoundHandler(), readapi.Timeouts{})
	assert.Equal(t, readapi.DefaultTimeouts.ReadHeader, srv.ReadHeaderTimeout)
	assert.Equal(t, readapi.DefaultTimeouts.Read, srv.ReadTimeout)
	assert.Equal(t, readapi.DefaultTimeouts.Write, srv.WriteTimeout)
	assert.Equal(t, readapi.DefaultTimeouts.Idle, srv.IdleTimeout)
	assert.Equal(t, readapi.MaxHeaderBytes, srv.MaxHeaderBytes)
	for name, d := range map[string]time.Duration{
		"header": readapi.DefaultTimeouts.ReadHeader, "read": readapi.DefaultTimeouts.Read,
		"write": readapi.DefaultTimeouts.Write, "idle": readapi.DefaultTimeouts.Idle,
	} {
		assert.Positive(t, d, "a zero %s timeout would let a slow client hold a connection", name)
	}
}

// A request whose header or body is larger than the bounds is refused
// before a handler can buffer it; one within them is served.
func TestOversizedRequestsAreRefused(t *testing.T) {
	for _, h := range homes {
		t.Run(h.name, func(t *testing.T) {
			api, _ := newAPI(t, h, nil)
			addr := serve(t, api, readapi.Timeouts{})

			get := func(header string) int {
				req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/api/v1/nodes", nil)
				require.NoError(t, err)
				req.Header.Set("X-Padding", header)
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				_ = resp.Body.Close()
				return resp.StatusCode
			}
			assert.Equal(t, http.StatusOK, get(strings.Repeat("x", readapi.MaxHeaderBytes/2)))
			assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, get(strings.Repeat("x", 2*readapi.MaxHeaderBytes)))

			if h.name != "legate serve" {
				return // only legate serve reads bodies (its writes and webhooks)
			}
			post := func(size int) int {
				resp, err := http.Post("http://"+addr+"/hooks/generic", "application/json", bytes.NewReader(make([]byte, size)))
				require.NoError(t, err)
				_ = resp.Body.Close()
				return resp.StatusCode
			}
			assert.Equal(t, http.StatusOK, post(httpguard.MaxRequestBody))
			assert.Equal(t, http.StatusRequestEntityTooLarge, post(httpguard.MaxRequestBody+1))
		})
	}
}

// Slow clients cannot hold connections: a body trickled a byte at a time
// and an idle keep-alive connection are both closed by the server.
func TestSlowClientsAreDisconnected(t *testing.T) {
	api, _ := newAPI(t, homes[0], nil)
	addr := serve(t, api, readapi.Timeouts{ReadHeader: 300 * time.Millisecond, Read: 600 * time.Millisecond, Write: time.Second, Idle: 300 * time.Millisecond})

	t.Run("trickled body", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer conn.Close()
		_, err = io.WriteString(conn, "POST /hooks/generic HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n")
		require.NoError(t, err)
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			_, _ = io.Copy(io.Discard, conn) // returns when the server closes
		}()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case <-closed:
				return
			case <-deadline:
				t.Fatal("the server kept a trickling connection open")
			case <-time.After(100 * time.Millisecond):
				if _, err := conn.Write([]byte("x")); err != nil {
					return // closed by the server
				}
			}
		}
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer conn.Close()
		_, err = io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		require.NoError(t, err)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		_, err = br.ReadByte() // blocks while the connection idles
		require.Error(t, err)
		var ne net.Error
		assert.False(t, errors.As(err, &ne) && ne.Timeout(), "closed by the server, not by the test's deadline: %v", err)
	})
}

// Serve stops when its context ends and reports no failure; a listener
// that fails is reported.
func TestServeStopsWithItsContext(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- readapi.Serve(ctx, readapi.NewServer(http.NotFoundHandler(), readapi.Timeouts{}), lis) }()
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + lis.Addr().String() + "/")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return true
	}, 10*time.Second, 10*time.Millisecond)
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	assert.Error(t, readapi.Serve(context.Background(), readapi.NewServer(http.NotFoundHandler(), readapi.Timeouts{}), closed))
}
