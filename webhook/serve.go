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

	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/xds"
)

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
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen for the admission webhooks on %s: %w", addr, err)
	}
	return lis, certs, nil
}

// Serve serves h over TLS on lis until ctx ends. Each handshake takes the
// current certificate of certs (files read again when they change, or
// legate's PKI's renewal), so no restart is needed.
func Serve(ctx context.Context, lis net.Listener, h http.Handler, certs xds.Certificates) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		MaxHeaderBytes:    64 << 10,
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
