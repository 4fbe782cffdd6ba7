package xds

import (
	"crypto/tls"
	"crypto/x509"
	"net"
)

// Certificates supplies the xDS server's key pair and the CA pool that
// signs the proxies' client certificates (nil: no client certificate is
// asked for). Current is called on every TLS handshake, so a source that
// renews them (pki.KeyPairFiles from files, a Kubernetes Secret) takes
// effect without a restart and without dropping the streams already open.
type Certificates interface {
	Current() (*tls.Certificate, *x509.CertPool, error)
}

// ServerTLS is the tls.Config of an xDS server whose certificates come
// from certs: TLS 1.2 or later, HTTP/2, and with a CA pool a client
// certificate that pool verifies (mutual TLS; see CertificateBinding for
// binding it to node IDs).
func ServerTLS(certs Certificates) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cert, pool, err := certs.Current()
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

// BeyondLoopback reports whether a listen address may be reached from
// another machine: an empty or unspecified host, a non-loopback IP, or a
// name other than localhost.
func BeyondLoopback(addr string) bool {
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
