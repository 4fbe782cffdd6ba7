package xds

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// tlsPeer is a stream context whose peer presented leaf, verified or not.
func tlsPeer(leaf *x509.Certificate, verified bool) context.Context {
	state := tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}
	if verified {
		state.VerifiedChains = [][]*x509.Certificate{{leaf}}
	}
	return peer.NewContext(context.Background(), &peer.Peer{AuthInfo: credentials.TLSInfo{State: state}})
}

func spiffe(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

// A verified certificate may act as the node IDs it names, in a DNS name,
// a URI or its common name, and is known by its principal.
func TestCertificateBinding(t *testing.T) {
	leaf := &x509.Certificate{
		Subject:  pkix.Name{CommonName: "edge-cn"},
		DNSNames: []string{"edge-dns"},
		URIs:     []*url.URL{spiffe(t, "spiffe://td/edge")},
	}
	for _, node := range []string{"edge-cn", "edge-dns", "spiffe://td/edge"} {
		id, err := CertificateBinding(tlsPeer(leaf, true), node)
		require.NoError(t, err, node)
		assert.Equal(t, "spiffe://td/edge", id, "the first URI is the principal")
	}

	_, err := CertificateBinding(tlsPeer(leaf, true), "other")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `subject "edge-cn"`)

	_, err = CertificateBinding(tlsPeer(leaf, false), "edge-cn")
	assert.ErrorContains(t, err, "no verified client certificate", "an unverified certificate binds nothing")

	noCerts := peer.NewContext(context.Background(), &peer.Peer{AuthInfo: credentials.TLSInfo{State: tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf}}}}})
	_, err = CertificateBinding(noCerts, "edge-cn")
	assert.ErrorContains(t, err, "no verified client certificate")

	plaintext := peer.NewContext(context.Background(), &peer.Peer{})
	_, err = CertificateBinding(plaintext, "edge-cn")
	assert.ErrorContains(t, err, "no verified client certificate")

	_, err = CertificateBinding(context.Background(), "edge-cn")
	assert.ErrorContains(t, err, "no peer")
}

func TestCertPrincipal(t *testing.T) {
	u := spiffe(t, "spiffe://td/a")
	for _, tt := range []struct {
		cert *x509.Certificate
		want string
	}{
		{&x509.Certificate{URIs: []*url.URL{u}, Subject: pkix.Name{CommonName: "cn"}, DNSNames: []string{"dns"}}, "spiffe://td/a"},
		{&x509.Certificate{Subject: pkix.Name{CommonName: "cn"}, DNSNames: []string{"dns"}}, "cn"},
		{&x509.Certificate{DNSNames: []string{"dns", "other"}}, "dns"},
		{&x509.Certificate{SerialNumber: big.NewInt(0xbeef)}, "serial:beef"},
	} {
		assert.Equal(t, tt.want, certPrincipal(tt.cert))
	}
	assert.Equal(t, []string{"dns", "spiffe://td/a", "cn"}, certIdentities(&x509.Certificate{URIs: []*url.URL{u}, Subject: pkix.Name{CommonName: "cn"}, DNSNames: []string{"dns"}}))
	assert.Equal(t, []string{"dns"}, certIdentities(&x509.Certificate{DNSNames: []string{"dns"}}), "no common name, none listed")
}
