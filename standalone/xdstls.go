package standalone

import (
	"errors"
	"fmt"
	"net"

	"github.com/legate-dev/legate/core"
	"github.com/legate-dev/legate/pki"
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

// xdsSecurity is how cfg serves xDS, for the rule both homes share
// (core.Tuning.CheckXDSExposure).
func xdsSecurity(cfg Config) core.XDSSecurity {
	return core.XDSSecurity{
		Addr:      cfg.XDSAddr,
		TLS:       cfg.XDSTLS != nil,
		MutualTLS: cfg.XDSTLS != nil && cfg.XDSTLS.ClientCAFile != "",
	}
}

// xdsExposure is the warning to log once xDS listens on addr under cfg
// ("" when there is none).
func xdsExposure(addr net.Addr, cfg *XDSTLSConfig) string {
	c := Config{XDSTLS: cfg}
	return core.XDSExposureWarning(addr, xdsSecurity(c))
}

// checkXDSExposure refuses, before anything listens, an xDS address beyond
// loopback without mutual TLS unless the operator opted in
// (--xds-insecure): the rule of both homes, core.Tuning.CheckXDSExposure.
func checkXDSExposure(cfg Config) error {
	return cfg.Tuning().CheckXDSExposure(xdsSecurity(cfg))
}
