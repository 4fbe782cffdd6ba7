package standalone

import (
	"errors"
	"fmt"
	"net"

	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/xds"
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

// newXDSTLS loads the server's certificate files (and the client CA), read
// again when they change; errors name the configuration field.
func newXDSTLS(cfg XDSTLSConfig) (*pki.KeyPairFiles, error) {
	certs, err := pki.LoadKeyPairFiles(cfg.CertFile, cfg.KeyFile, cfg.ClientCAFile)
	var fe *pki.FileError
	switch {
	case errors.As(err, &fe):
		field := map[string]string{"certFile": "certFile", "keyFile": "keyFile", "caFile": "clientCAFile"}[fe.Field]
		return nil, fmt.Errorf("xdsTLS.%s: %w", field, fe.Err)
	case err != nil:
		return nil, fmt.Errorf("xDS TLS: %w", err)
	}
	return certs, nil
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
	if cfg.XDSInsecure || (cfg.XDSTLS != nil && cfg.XDSTLS.ClientCAFile != "") || !xds.BeyondLoopback(cfg.XDSAddr) {
		return nil
	}
	what := "plaintext"
	if cfg.XDSTLS != nil {
		what = "TLS without client certificates"
	}
	return fmt.Errorf("xdsAddr %s reaches beyond loopback and xDS would run over %s: any client that reaches it could fetch every node's configuration and answer for its proxies; "+
		"set --xds-tls-cert, --xds-tls-key and --xds-client-ca (legate pki init makes them), listen on 127.0.0.1, or accept the risk with --xds-insecure", cfg.XDSAddr, what)
}
