package readapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// MaxHeaderBytes bounds a request's header. Every request legate reads is
// small: a probe, a read, a token-protected call or a webhook delivery,
// whose body httpguard bounds (httpguard.MaxRequestBody).
const MaxHeaderBytes = 16 << 10

// Timeouts of the HTTP server. Slow clients must not hold connections: a
// request's header has ReadHeader to arrive, the whole request (a webhook
// body at most) Read, the answer Write, and a keep-alive connection is
// closed after Idle.
type Timeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
}

// DefaultTimeouts are both homes' timeouts (tests shorten them).
var DefaultTimeouts = Timeouts{ReadHeader: 5 * time.Second, Read: 10 * time.Second, Write: 30 * time.Second, Idle: time.Minute}

// NewServer is the HTTP server both homes run h in; a zero Timeouts means
// DefaultTimeouts.
func NewServer(h http.Handler, t Timeouts) *http.Server {
	if t == (Timeouts{}) {
		t = DefaultTimeouts
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
		MaxHeaderBytes:    MaxHeaderBytes,
	}
}

// shutdownGrace bounds how long Serve waits for answers in flight once its
// context ends.
const shutdownGrace = 10 * time.Second

// Serve serves srv on lis until ctx ends, then shuts it down gracefully
// (for shutdownGrace at most). It returns the server's failure, nil after
// a shutdown.
func Serve(ctx context.Context, srv *http.Server, lis net.Listener) error {
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-ctx.Done():
		case <-stopped:
			return
		}
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
