package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/legate-dev/legate/netguard"
	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/xds"
)

// IdleTimeout is how long the webhooks keep an idle connection of the API
// server open. It is longer than the idle timeout of the API server's
// client (client-go's transport: 90 s), so that the API server, not
// legate, closes an idle connection: when the server closes it first, a
// review the API server is sending on it at that moment fails (a POST is
// not retried), and with failurePolicy Fail its Pod is refused. It also
// keeps the connection, and so the TLS handshake, out of every call made
// less than two minutes after the previous one.
const IdleTimeout = 2 * time.Minute

// Listen opens the webhooks' listener on addr with their certificate:
// tls.crt and tls.key of certDir when it is set (read again when they
// change), otherwise issued (legate's PKI, nil when it is off). A missing
// certificate fails here, at start, not at the API server's first call.
func Listen(addr, certDir string, issued xds.Certificates) (net.Listener, xds.Certificates, error) {
	certs := issued
	if certDir != "" {
		files, err := pki.LoadKeyPairFiles(filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key"), "")
		if err != nil {
			return nil, nil, fmt.Errorf("--webhook-cert-dir: %w", err)
		}
		certs = files
	}
	if certs == nil {
		return nil, nil, errors.New("the admission webhooks need --webhook-cert-dir or legate's PKI: the API server calls them over TLS only")
	}
	lis, err := netguard.Listen("the admission webhooks", addr, "--webhook-addr")
	if err != nil {
		return nil, nil, err
	}
	return lis, certs, nil
}

// Serve serves h over TLS on lis until ctx ends. Each handshake takes the
// current certificate of certs (files read again when they change, or
// legate's PKI's renewal), so no restart is needed.
func Serve(ctx context.Context, lis net.Listener, h http.Handler, certs xds.Certificates) error {
	return serve(ctx, lis, h, certs, nil)
}

// Serve serves the server's webhooks (Handler) over TLS on lis until ctx
// ends, as the package's Serve, counting the connections the API server
// opens (Register).
func (s *Server) Serve(ctx context.Context, lis net.Listener, certs xds.Certificates) error {
	var opened func(net.Conn, http.ConnState)
	if s.connections != nil {
		opened = func(_ net.Conn, state http.ConnState) {
			if state == http.StateNew {
				s.connections.Inc()
			}
		}
	}
	return serve(ctx, lis, s.Handler(), certs, opened)
}

func serve(ctx context.Context, lis net.Listener, h http.Handler, certs xds.Certificates, connState func(net.Conn, http.ConnState)) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ConnState:         connState,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			cert, _, err := certs.Current()
			return cert, err
		}},
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.ServeTLS(lis, "", ""); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
