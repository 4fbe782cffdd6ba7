package transport

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// testPKI is a throwaway CA with a server and a client certificate.
type testPKI struct {
	roots          *x509.CertPool
	server, client tls.Certificate
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "legate test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)

	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage) tls.Certificate {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		template := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
		require.NoError(t, err)
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	return testPKI{
		roots:  roots,
		server: leaf(2, "legate", x509.ExtKeyUsageServerAuth),
		client: leaf(3, "proxy-1", x509.ExtKeyUsageClientAuth),
	}
}

func (p testPKI) serverTLS() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{p.server},
		ClientCAs:    p.roots,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		NextProtos:   []string{"h2"},
		MinVersion:   tls.VersionTLS12,
	}
}

func (p testPKI) clientTLS(nextProtos ...string) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{p.client},
		RootCAs:      p.roots,
		ServerName:   "127.0.0.1",
		NextProtos:   nextProtos,
		MinVersion:   tls.VersionTLS12,
	}
}

func TestATLSClientsVerifiedCertificateReachesTheHandler(t *testing.T) {
	pki := newTestPKI(t)
	peers := make(chan *peer.Peer, 1)
	_, addr := startServer(t, Config{TLS: pki.serverTLS()}, func(st grpc.ServerStream) error {
		p, _ := peer.FromContext(st.Context())
		peers <- p
		return echo(st)
	})
	cc := dialGRPC(t, addr, grpc.WithTransportCredentials(credentials.NewTLS(pki.clientTLS())))
	cs := openEcho(t, t.Context(), cc)
	// Larger than a TLS record and than the windows: writes gathered
	// over TLS, in many frames.
	payload := bytes.Repeat([]byte("over TLS "), 1<<17)
	require.NoError(t, cs.SendMsg(wrapperspb.Bytes(payload)))
	got := new(wrapperspb.BytesValue)
	require.NoError(t, cs.RecvMsg(got))
	assert.True(t, bytes.Equal(payload, got.Value), "the echo over TLS differs")

	p := receive(t, peers, "the handler's peer")
	require.NotNil(t, p)
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	require.True(t, ok, "the peer's AuthInfo is %T", p.AuthInfo)
	assert.Equal(t, "h2", info.State.NegotiatedProtocol)
	assert.Equal(t, credentials.PrivacyAndIntegrity, info.SecurityLevel)
	require.NotEmpty(t, info.State.VerifiedChains)
	assert.Equal(t, "proxy-1", info.State.VerifiedChains[0][0].Subject.CommonName)
	assert.Equal(t, "legate test CA", info.State.VerifiedChains[0][len(info.State.VerifiedChains[0])-1].Subject.CommonName)
}

func TestATLSClientThatDoesNotOfferH2IsRefused(t *testing.T) {
	pki := newTestPKI(t)
	_, addr := startServer(t, Config{TLS: pki.serverTLS(), HandshakeTimeout: time.Hour}, echo)
	for _, tc := range []struct {
		name          string
		nextProtos    []string
		handshakeFail bool
	}{
		{name: "no ALPN"},
		{name: "http/1.1 alone", nextProtos: []string{"http/1.1"}},
		// Go's TLS server answers no_application_protocol itself.
		{name: "another protocol", nextProtos: []string{"spdy/3"}, handshakeFail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			t.Cleanup(func() { _ = nc.Close() })
			require.NoError(t, nc.SetDeadline(time.Now().Add(waitFor)))
			client := tls.Client(nc, pki.clientTLS(tc.nextProtos...))
			err = client.Handshake()
			if tc.handshakeFail {
				assert.ErrorContains(t, err, "no application protocol")
				return
			}
			require.NoError(t, err)
			assert.Empty(t, client.ConnectionState().NegotiatedProtocol)
			// A client that speaks HTTP/2 anyway is closed, and sent
			// nothing.
			_, _ = io.WriteString(client, http2.ClientPreface)
			n, err := io.Copy(io.Discard, client)
			var ne net.Error
			assert.False(t, errors.As(err, &ne) && ne.Timeout(), "the server did not close the connection")
			assert.Zero(t, n, "bytes from the server")
		})
	}
}

func TestARefusedHandshakeIsLoggedAtDebug(t *testing.T) {
	pki := newTestPKI(t)
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{Verbosity: 1})
	_, addr := startServer(t, Config{TLS: pki.serverTLS(), Log: log}, echo)

	// A client with no certificate: the server requires one.
	noCert := pki.clientTLS("h2")
	noCert.Certificates = nil
	nc, err := tls.Dial("tcp", addr, noCert)
	if err == nil {
		// Under TLS 1.3 the client's side completes first; the refusal
		// comes on its first read.
		require.NoError(t, nc.SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err = nc.Read(make([]byte, 1))
		assert.ErrorContains(t, err, "certificate required")
		_ = nc.Close()
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lines {
			if strings.Contains(l, "refused in its handshake") && strings.Contains(l, "certificate") && strings.Contains(l, "127.0.0.1:") {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "a debug line naming the peer and the reason")
}
