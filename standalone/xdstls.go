package standalone

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
)

// XDSTLSConfig serves xDS over TLS. With ClientCAFile it is mutual TLS:
// every proxy presents a certificate signed by that CA, and a certificate
// may fetch only the node IDs it names (see xds.CertificateBinding).
type XDSTLSConfig struct {
	// CertFile and KeyFile are the server's certificate chain and key
	// (PEM). They are read again when they change, so a renewed
	// certificate is served without a restart.
	CertFile string `json:"certFile"`
	KeyFile  string `json:"keyFile"`
	// ClientCAFile, when set, holds the CA certificates (PEM) that sign
	// the proxies' client certificates; a stream without one is refused.
	ClientCAFile string `json:"clientCAFile,omitempty"`
}

func (c *XDSTLSConfig) validate() []error {
	if c == nil {
		return nil
	}
	var errs []error
	if c.CertFile == "" {
		errs = append(errs, errors.New("xdsTLS.certFile: required (--xds-tls-cert)"))
	}
	if c.KeyFile == "" {
		errs = append(errs, errors.New("xdsTLS.keyFile: required (--xds-tls-key)"))
	}
	return errs
}

// xdsTLS builds the server's TLS configuration from files, reading the
// key pair and the client CA again whenever a file's modification time
// or size changes.
type xdsTLS struct {
	cfg XDSTLSConfig

	mu     sync.Mutex
	stamps [3]fileStamp
	cert   *tls.Certificate
	pool   *x509.CertPool
}

type fileStamp struct {
	size  int64
	mtime int64
}

func stampOf(path string) (fileStamp, error) {
	if path == "" {
		return fileStamp{}, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}, nil
}

// newXDSTLS loads the files once, so that a wrong path or a broken PEM
// file stops the start with a clear error.
func newXDSTLS(cfg XDSTLSConfig) (*xdsTLS, error) {
	t := &xdsTLS{cfg: cfg}
	if _, _, err := t.current(); err != nil {
		return nil, err
	}
	return t, nil
}

// current returns the key pair and client CA pool, reloaded if a file
// changed. A reload that fails keeps the last good ones and returns the
// error only when there are none.
func (t *xdsTLS) current() (*tls.Certificate, *x509.CertPool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var now [3]fileStamp
	for i, f := range []struct{ field, path string }{
		{"certFile", t.cfg.CertFile}, {"keyFile", t.cfg.KeyFile}, {"clientCAFile", t.cfg.ClientCAFile},
	} {
		s, err := stampOf(f.path)
		if err != nil {
			if t.cert != nil {
				return t.cert, t.pool, nil
			}
			return nil, nil, fmt.Errorf("xdsTLS.%s: %w", f.field, err)
		}
		now[i] = s
	}
	if t.cert != nil && now == t.stamps {
		return t.cert, t.pool, nil
	}
	cert, pool, err := t.load()
	if err != nil {
		if t.cert != nil {
			return t.cert, t.pool, nil
		}
		return nil, nil, err
	}
	t.cert, t.pool, t.stamps = cert, pool, now
	return cert, pool, nil
}

func (t *xdsTLS) load() (*tls.Certificate, *x509.CertPool, error) {
	cert, err := tls.LoadX509KeyPair(t.cfg.CertFile, t.cfg.KeyFile)
	if err != nil {
		// The error names the files; it never holds their content.
		return nil, nil, fmt.Errorf("xDS TLS: load the key pair %s and %s: %w", t.cfg.CertFile, t.cfg.KeyFile, err)
	}
	if t.cfg.ClientCAFile == "" {
		return &cert, nil, nil
	}
	pem, err := os.ReadFile(t.cfg.ClientCAFile)
	if err != nil {
		return nil, nil, fmt.Errorf("xDS TLS: read the client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, nil, fmt.Errorf("xDS TLS: %s holds no PEM certificate", t.cfg.ClientCAFile)
	}
	return &cert, pool, nil
}

// serverConfig is the tls.Config of the gRPC server: every handshake takes
// the current files.
func (t *xdsTLS) serverConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cert, pool, err := t.current()
			if err != nil {
				return nil, err
			}
			c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*cert}, NextProtos: []string{"h2"}}
			if pool != nil {
				c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, pool
			}
			return c, nil
		},
	}
}

// xdsExposure warns when xDS listens beyond loopback without mutual TLS:
// then any client that reaches the port can fetch any node's
// configuration under any node ID.
func xdsExposure(addr net.Addr, cfg *XDSTLSConfig) string {
	if cfg != nil && cfg.ClientCAFile != "" {
		return ""
	}
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		return ""
	}
	what := "plaintext"
	if cfg != nil {
		what = "TLS without client certificates"
	}
	return fmt.Sprintf("xDS is served on %s over %s: any client that reaches it can fetch any node's configuration; set --xds-tls-cert, --xds-tls-key and --xds-client-ca (legate pki init makes them) or listen on loopback", addr, what)
}

// checkXDSExposure refuses, before anything listens, an xDS address beyond
// loopback without mutual TLS unless the operator opted in: whoever reaches
// such a port may fetch every node's configuration and answer for its
// proxies.
func checkXDSExposure(cfg Config) error {
	if cfg.XDSInsecure || (cfg.XDSTLS != nil && cfg.XDSTLS.ClientCAFile != "") || !beyondLoopback(cfg.XDSAddr) {
		return nil
	}
	what := "plaintext"
	if cfg.XDSTLS != nil {
		what = "TLS without client certificates"
	}
	return fmt.Errorf("xdsAddr %s reaches beyond loopback and xDS would run over %s: any client that reaches it could fetch every node's configuration and answer for its proxies; "+
		"set --xds-tls-cert, --xds-tls-key and --xds-client-ca (legate pki init makes them), listen on 127.0.0.1, or accept the risk with --xds-insecure", cfg.XDSAddr, what)
}

// beyondLoopback reports whether a listen address may be reached from
// another machine: an empty or unspecified host, a non-loopback IP, or a
// name other than localhost.
func beyondLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return true
	}
	if host == "localhost" {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}
