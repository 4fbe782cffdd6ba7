package standalone

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/legate-dev/legate/serveconfig"
)

// testPKI is a CA with the server's certificate for 127.0.0.1, written to
// files as legate reads them.
type testPKI struct {
	ca                        testCert
	dir                       string
	certFile, keyFile, caFile string
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir()}
	p.ca = issue(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "legate test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, nil)
	p.certFile, p.keyFile, p.caFile = filepath.Join(p.dir, "tls.crt"), filepath.Join(p.dir, "tls.key"), filepath.Join(p.dir, "ca.crt")
	require.NoError(t, os.WriteFile(p.caFile, p.ca.certPEM, 0o600))
	p.writeServer(t, "legate-xds")
	return p
}

// writeServer issues a new server certificate and writes it over the
// served files.
func (p *testPKI) writeServer(t *testing.T, cn string) testCert {
	t.Helper()
	c := issue(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: cn}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, &p.ca)
	require.NoError(t, os.WriteFile(p.keyFile, c.keyPEM, 0o600))
	require.NoError(t, os.WriteFile(p.certFile, c.certPEM, 0o600))
	return c
}

// client issues a client certificate from tmpl (its names) and returns the
// TLS configuration of a proxy presenting it; nil tmpl presents none.
func (p *testPKI) client(t *testing.T, tmpl *x509.Certificate) *tls.Config {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(p.ca.cert)
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if tmpl != nil {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		c := issue(t, tmpl, &p.ca)
		pair, err := tls.X509KeyPair(c.certPEM, c.keyPEM)
		require.NoError(t, err)
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}

// startTLSServer runs a server on a repository whose configuration is for
// node "edge", serving xDS with the given TLS settings.
func startTLSServer(t *testing.T, tlsCfg *serveconfig.XDSTLSConfig) *Server {
	t.Helper()
	repo := newLocalRepo(t)
	repo.commit("a")
	s := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), DefaultNode: "edge", XDSTLS: tlsCfg,
		Sources: []serveconfig.SourceConfig{{Name: "config", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}, Options{})
	runServer(t, s)
	require.Eventually(t, func() bool {
		n, ok := s.engine.Node("edge")
		return ok && n.Published != nil
	}, 30*time.Second, 10*time.Millisecond, "the revision is published")
	return s
}

// openClusters opens an ADS stream as node, asks for clusters and returns
// a function that receives the next response or the stream's error.
func openClusters(t *testing.T, addr string, creds credentials.TransportCredentials, node string) func() (*discoveryv3.DiscoveryResponse, error) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		return func() (*discoveryv3.DiscoveryResponse, error) { return nil, err }
	}
	// A refused stream may already be closed: its error comes with Recv.
	_ = stream.Send(&discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: node}, TypeUrl: resourcev3.ClusterType})
	return stream.Recv
}

// fetchClusters returns the first CDS response to node or the error.
func fetchClusters(t *testing.T, addr string, creds credentials.TransportCredentials, node string) (*discoveryv3.DiscoveryResponse, error) {
	t.Helper()
	return openClusters(t, addr, creds, node)()
}

func TestXDSOverMutualTLSBindsCertificatesToNodes(t *testing.T) {
	pki := newTestPKI(t)
	s := startTLSServer(t, &serveconfig.XDSTLSConfig{CertFile: pki.certFile, KeyFile: pki.keyFile, ClientCAFile: pki.caFile})
	spiffe, err := url.Parse("spiffe://example.org/ns/prod/sa/edge")
	require.NoError(t, err)

	tests := []struct {
		name string
		cert *x509.Certificate
		node string
		code codes.Code
		msg  string
	}{
		{name: "DNS name", cert: &x509.Certificate{Subject: pkix.Name{CommonName: "proxy"}, DNSNames: []string{"edge"}}, node: "edge", code: codes.OK},
		{name: "common name", cert: &x509.Certificate{Subject: pkix.Name{CommonName: "edge"}}, node: "edge", code: codes.OK},
		{name: "URI", cert: &x509.Certificate{URIs: []*url.URL{spiffe}}, node: spiffe.String(), code: codes.OK},
		{
			name: "another node's certificate", cert: &x509.Certificate{Subject: pkix.Name{CommonName: "other"}, DNSNames: []string{"other"}}, node: "edge",
			code: codes.PermissionDenied, msg: `node "edge" is not allowed: the client certificate (subject "other") does not name this node ID`,
		},
		{
			name: "a name that only contains the node ID", cert: &x509.Certificate{Subject: pkix.Name{CommonName: "edge-2"}, DNSNames: []string{"edge.example"}}, node: "edge",
			code: codes.PermissionDenied, msg: `node "edge" is not allowed`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recv := openClusters(t, s.XDSAddr(), credentials.NewTLS(pki.client(t, tt.cert)), tt.node)
			switch {
			case tt.code == codes.OK && tt.node == "edge":
				resp, err := recv()
				require.NoError(t, err)
				assert.Equal(t, resourcev3.ClusterType, resp.GetTypeUrl())
				assert.Len(t, resp.GetResources(), 1)
				return
			case tt.code == codes.OK:
				// Nothing is configured for this node: the admitted stream
				// shows as a connected proxy.
				require.Eventually(t, func() bool { return len(s.xds.Proxies(tt.node)) == 1 },
					20*time.Second, 10*time.Millisecond, "the stream is admitted")
				assert.Equal(t, spiffe.String(), s.xds.Proxies(tt.node)[0].Proxy, "the proxy is counted under the certificate's identity")
				return
			}
			_, err := recv()
			require.Error(t, err)
			assert.Equal(t, tt.code, status.Code(err), "%v", err)
			assert.Contains(t, status.Convert(err).Message(), tt.msg)
		})
	}

	t.Run("no client certificate", func(t *testing.T) {
		_, err := fetchClusters(t, s.XDSAddr(), credentials.NewTLS(pki.client(t, nil)), "edge")
		require.Error(t, err)
		assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	})
	t.Run("plaintext", func(t *testing.T) {
		_, err := fetchClusters(t, s.XDSAddr(), insecure.NewCredentials(), "edge")
		require.Error(t, err)
		assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	})
}

func TestXDSOverTLSReloadsTheServerCertificate(t *testing.T) {
	pki := newTestPKI(t)
	s := startTLSServer(t, &serveconfig.XDSTLSConfig{CertFile: pki.certFile, KeyFile: pki.keyFile})
	served := func() string {
		cfg := pki.client(t, nil)
		var cn string
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			cn = cs.PeerCertificates[0].Subject.CommonName
			return nil
		}
		_, err := fetchClusters(t, s.XDSAddr(), credentials.NewTLS(cfg), "edge")
		require.NoError(t, err, "server TLS without a client CA admits any node")
		return cn
	}
	assert.Equal(t, "legate-xds", served())

	renewed := pki.writeServer(t, "legate-xds-renewed")
	// The file's modification time may not move within its resolution:
	// move it on so the change is seen.
	later := time.Now().Add(time.Minute)
	require.NoError(t, os.Chtimes(pki.certFile, later, later))
	assert.Equal(t, renewed.cert.Subject.CommonName, served(), "a renewed certificate is served without a restart")

	// A broken file keeps the last good certificate.
	require.NoError(t, os.WriteFile(pki.certFile, []byte("not PEM"), 0o600))
	assert.Equal(t, renewed.cert.Subject.CommonName, served())
}

// The files' errors name the field, the flag and the file, never key
// material (core.XDSTLSFiles, as the server loads them).
func TestXDSTLSFilesErrors(t *testing.T) {
	pki := newTestPKI(t)
	serverOption := func(c serveconfig.XDSTLSConfig) error {
		_, err := c.Files().TLSConfig()
		return err
	}
	err := serverOption(serveconfig.XDSTLSConfig{CertFile: pki.certFile, KeyFile: filepath.Join(pki.dir, "missing.key")})
	assert.ErrorContains(t, err, filepath.Join(pki.dir, "missing.key"))
	err = serverOption(serveconfig.XDSTLSConfig{CertFile: pki.certFile, KeyFile: pki.keyFile, ClientCAFile: pki.keyFile})
	assert.ErrorContains(t, err, pki.keyFile+" holds no PEM certificate")
	assert.NotContains(t, err.Error(), "PRIVATE KEY", "no key material in errors")
	assert.NoError(t, serverOption(serveconfig.XDSTLSConfig{CertFile: pki.certFile, KeyFile: pki.keyFile, ClientCAFile: pki.caFile}))
}

// A start that fails after the store is open (here: the xDS port is taken,
// the commonest mistake) returns the error and releases the store, so the
// next start on the same state directory works.
func TestFailedStartReleasesTheStore(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = taken.Close() })
	cfg := serveconfig.Config{
		XDSAddr: taken.Addr().String(), HTTPAddr: "127.0.0.1:0", StateDir: t.TempDir(),
		Sources: []serveconfig.SourceConfig{{Name: "config", Git: &serveconfig.GitSource{URL: newLocalRepo(t).dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}
	s, err := New(cfg, Options{})
	require.Error(t, err)
	assert.Nil(t, s)
	assert.Contains(t, err.Error(), "xdsAddr (--xds-addr): listen for xDS on "+taken.Addr().String()+": the address is in use, by another legate or another program")

	_, err = New(serveconfig.Config{StateDir: cfg.StateDir, Sources: cfg.Sources, XDSTLS: &serveconfig.XDSTLSConfig{CertFile: "/nonexistent/tls.crt", KeyFile: "/nonexistent/tls.key"}}, Options{})
	assert.ErrorContains(t, err, "xdsTLS.certFile (--xds-tls-cert): stat /nonexistent/tls.crt")

	newServer(t, cfg, Options{}).close()
}
