package core

import (
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/xds"
)

// XDSTLSFiles are the PEM files of xDS over TLS, the same in both homes:
// --xds-tls-cert, --xds-tls-key and --xds-client-ca (in standalone's
// config file xdsTLS.certFile, keyFile and clientCAFile). With ClientCA
// it is mutual TLS.
type XDSTLSFiles struct {
	Cert, Key, ClientCA string
}

// The knobs of the files, named as flag and config field.
var (
	KnobXDSTLSCert  = Knob{"xds-tls-cert", "xdsTLS.certFile"}
	KnobXDSTLSKey   = Knob{"xds-tls-key", "xdsTLS.keyFile"}
	KnobXDSClientCA = Knob{"xds-client-ca", "xdsTLS.clientCAFile"}
)

// Set reports whether any file is named, i.e. xDS is meant to run over
// TLS.
func (f XDSTLSFiles) Set() bool { return f.Cert != "" || f.Key != "" || f.ClientCA != "" }

// Security is how xDS on addr is served with these files, for
// CheckXDSExposure.
func (f XDSTLSFiles) Security(addr string) XDSSecurity {
	return XDSSecurity{Addr: addr, TLS: f.Set(), MutualTLS: f.Set() && f.ClientCA != ""}
}

// Problems lists what is missing: once any file is named, the
// certificate and its key are required.
func (f XDSTLSFiles) Problems() []error {
	if !f.Set() {
		return nil
	}
	return f.Missing()
}

// Missing lists the certificate and key when they are not named, for a
// caller that knows xDS is meant to run over TLS (a config file's xdsTLS
// block) even though no file is named.
func (f XDSTLSFiles) Missing() []error {
	var errs []error
	if f.Cert == "" {
		errs = append(errs, fmt.Errorf("%s: required for xDS over TLS", KnobXDSTLSCert))
	}
	if f.Key == "" {
		errs = append(errs, fmt.Errorf("%s: required for xDS over TLS", KnobXDSTLSKey))
	}
	return errs
}

// Load reads the files (read again when they change, so a renewed
// certificate is served without a restart). An error names the file's
// field and flag, never key material.
func (f XDSTLSFiles) Load() (*pki.KeyPairFiles, error) {
	if err := errors.Join(f.Problems()...); err != nil {
		return nil, err
	}
	certs, err := pki.LoadKeyPairFiles(f.Cert, f.Key, f.ClientCA)
	var fe *pki.FileError
	switch {
	case errors.As(err, &fe):
		k := map[string]Knob{"certFile": KnobXDSTLSCert, "keyFile": KnobXDSTLSKey, "caFile": KnobXDSClientCA}[fe.Field]
		return nil, fmt.Errorf("%s: %w", k, fe.Err)
	case err != nil:
		return nil, fmt.Errorf("xDS TLS: %w", err)
	}
	return certs, nil
}

// TLSConfig is the TLS configuration of xDS from the files
// (xds.ServerTLS); nil when none is named.
func (f XDSTLSFiles) TLSConfig() (*tls.Config, error) {
	if !f.Set() {
		return nil, nil
	}
	certs, err := f.Load()
	if err != nil {
		return nil, err
	}
	return xds.ServerTLS(certs), nil
}
