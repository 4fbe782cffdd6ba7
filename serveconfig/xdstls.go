package serveconfig

import (
	"net"

	"github.com/legate-dev/legate/core"
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

// Files are c's files as both homes name them (core.XDSTLSFiles); a nil
// c names none. Their Load and ServerOption errors name the field and
// the flag.
func (c *XDSTLSConfig) Files() core.XDSTLSFiles {
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
	return c.Files().Missing()
}

// XDSSecurity is how c serves xDS, for the rule both homes share
// (core.Tuning.CheckXDSExposure).
func (c Config) XDSSecurity() core.XDSSecurity {
	sec := c.XDSTLS.Files().Security(c.XDSAddr)
	sec.TLS = c.XDSTLS != nil // an empty block is refused by validate
	return sec
}

// XDSExposureWarning is the warning to log once xDS listens on addr under
// c ("" when there is none).
func (c Config) XDSExposureWarning(addr net.Addr) string {
	return core.XDSExposureWarning(addr, c.XDSSecurity())
}

// CheckXDSExposure refuses, before anything listens, an xDS address beyond
// loopback without mutual TLS unless the operator opted in
// (--xds-insecure): the rule of both homes, core.Tuning.CheckXDSExposure.
func (c Config) CheckXDSExposure() error {
	return c.Tuning().CheckXDSExposure(c.XDSSecurity())
}
