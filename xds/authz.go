package xds

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// CertificateBinding is the Authorizer of mutual TLS: a stream may act as
// node ID n when its verified client certificate names n as one of its DNS
// names, one of its URIs (a SPIFFE ID, for example) or its subject common
// name. The identity it returns is the certificate's principal (see
// certPrincipal), so that the proxies a certificate speaks for are counted
// under it, whatever pod name they claim.
func CertificateBinding(ctx context.Context, node string) (string, error) {
	leaf, err := ClientCertificate(ctx)
	if err != nil {
		return "", err
	}
	if !slices.Contains(certIdentities(leaf), node) {
		return "", fmt.Errorf("the client certificate (subject %q) does not name this node ID in its DNS names, URIs or common name", leaf.Subject.CommonName)
	}
	return certPrincipal(leaf), nil
}

// ClientCertificate is the verified client certificate of a stream's peer.
func ClientCertificate(ctx context.Context) (*x509.Certificate, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil, errors.New("no peer on the stream")
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.PeerCertificates) == 0 {
		return nil, errors.New("the stream presented no verified client certificate")
	}
	return info.State.PeerCertificates[0], nil
}

// certIdentities lists the names a certificate binds: its DNS names, its
// URIs and its subject common name.
func certIdentities(c *x509.Certificate) []string {
	ids := slices.Clone(c.DNSNames)
	for _, u := range c.URIs {
		ids = append(ids, u.String())
	}
	if c.Subject.CommonName != "" {
		ids = append(ids, c.Subject.CommonName)
	}
	return ids
}

// certPrincipal is the one name a certificate is known by: its first URI
// (a SPIFFE ID), else its common name, else its first DNS name, else its
// serial number.
func certPrincipal(c *x509.Certificate) string {
	switch {
	case len(c.URIs) > 0:
		return c.URIs[0].String()
	case c.Subject.CommonName != "":
		return c.Subject.CommonName
	case len(c.DNSNames) > 0:
		return c.DNSNames[0]
	default:
		return "serial:" + c.SerialNumber.Text(16)
	}
}

// proxyName is the name a stream's answers are counted and shown under:
// the pod name the client sent, qualified by the identity the Authorizer
// proved when there is one. Metadata may refine an identity (several pods
// sharing a certificate) but never replace it.
func proxyName(identity, pod string) string {
	switch {
	case identity == "":
		return pod
	case pod == "" || pod == identity:
		return identity
	default:
		return identity + "/" + pod
	}
}
