package standalone

import (
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

// files are c's files as both homes name them (core.XDSTLSFiles).
func (c *XDSTLSConfig) files() core.XDSTLSFiles {
	if c == nil {
		return core.XDSTLSFiles{}
	}
	return core.XDSTLSFiles{Cert: c.CertFile, Key: c.KeyFile, ClientCA: c.ClientCAFile}
}

// validate: an xdsTLS block asks for TLS, so it needs its certificate and
// key even when it names no file.
func (c *XDSTLSConfig) validate() []error {
	if c == nil {
		return nil
	}
	return c.files().Missing()
}

// newXDSTLS loads the server's certificate files (and the client CA), read
// again when they change; errors name the field and the flag.
func newXDSTLS(cfg XDSTLSConfig) (*pki.KeyPairFiles, error) {
	return cfg.files().Load()
}

// xdsSecurity is how cfg serves xDS, for the rule both homes share
// (core.Tuning.CheckXDSExposure).
func xdsSecurity(cfg Config) core.XDSSecurity {
	sec := cfg.XDSTLS.files().Security(cfg.XDSAddr)
	sec.TLS = cfg.XDSTLS != nil // an empty block is refused by validate
	return sec
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
