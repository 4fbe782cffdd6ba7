package e2e

import (
	"context"
	"crypto/tls"
	"net"
	"path/filepath"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/legate-dev/legate/test/internal/testpki"
	"github.com/legate-dev/legate/test/xdsclient"
)

// mtlsPKI is the PKI of the mutual TLS test: a CA legate trusts for client
// certificates, legate's server certificate for 127.0.0.1, a client
// certificate that names the test's node ID, one that names another node,
// and a CA legate does not trust.
type mtlsPKI struct {
	ca, untrusted       *testpki.CA
	caFile              string
	serverCert, srvKey  string
	clientDir           string
	client, wrongClient testpki.KeyPair
}

const (
	// goodClientCN and wrongClientCN are the subjects of the two client
	// certificates. The good one names the node in a DNS name, not in its
	// subject.
	goodClientCN  = "grpc-proxy"
	wrongClientCN = "other-proxy"
)

func newMTLSPKI(t *testing.T) *mtlsPKI {
	t.Helper()
	dir := t.TempDir()
	p := &mtlsPKI{ca: testpki.NewCA(t, "legate e2e CA"), untrusted: testpki.NewCA(t, "untrusted CA")}
	p.caFile = p.ca.Write(t, filepath.Join(dir, "ca.crt"))
	p.serverCert, p.srvKey = p.ca.Issue(t, testpki.Identity{CommonName: "legate", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}).
		Write(t, filepath.Join(dir, "server"))
	p.client = p.ca.Issue(t, testpki.Identity{CommonName: goodClientCN, DNSNames: []string{nodeID}})
	p.clientDir = filepath.Join(dir, "client")
	p.client.Write(t, p.clientDir)
	p.wrongClient = p.ca.Issue(t, testpki.Identity{CommonName: wrongClientCN, DNSNames: []string{"other-node"}})
	return p
}

// dialADSWith opens an ADS client to addr with creds; the connection
// closes when the test ends.
func dialADSWith(t *testing.T, addr string, creds credentials.TransportCredentials) discoveryv3.AggregatedDiscoveryServiceClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return discoveryv3.NewAggregatedDiscoveryServiceClient(cc)
}

// firstAnswer opens a state-of-the-world stream as the test's node, asks
// for the listeners and returns the first response, or the error that
// ends the stream first.
func firstAnswer(t *testing.T, ads discoveryv3.AggregatedDiscoveryServiceClient, pod string) (*discoveryv3.DiscoveryResponse, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	st, err := ads.StreamAggregatedResources(ctx)
	if err != nil {
		return nil, err
	}
	// A stream whose transport fails may report it on Send (as io.EOF) or
	// only on Recv; Recv returns the stream's status either way.
	_ = st.Send(&discoveryv3.DiscoveryRequest{Node: rawNode(pod), TypeUrl: resourcev3.ListenerType})
	resp, err := st.Recv()
	require.NoError(t, ctx.Err(), "the stream ended before the deadline")
	return resp, err
}

// TestMTLSBindsClientCertificatesToNodeIDs runs legate serve with
// --xds-tls-cert, --xds-tls-key and --xds-client-ca: grpc-go's xDS client
// with a certificate naming the node gets the configuration over mutual TLS
// and its RPCs reach the backend; a certificate naming another node is
// refused with PermissionDenied naming the node; a stream without a client
// certificate, with one from another CA, or in plaintext gets nothing.
func TestMTLSBindsClientCertificatesToNodeIDs(t *testing.T) {
	p := newMTLSPKI(t)
	a, b := startBackend(t, "A"), startBackend(t, "B")
	repo := newGitRepo(t)
	sha := repo.Commit("route to A", greeterConfig{route: "backend-a", portA: a.Port, portB: b.Port}.files())
	lg := serveRepo(t, repo, legateOptions{args: []string{"--xds-tls-cert", p.serverCert, "--xds-tls-key", p.srvKey, "--xds-client-ca", p.caFile}})

	// grpc-go's xDS client over mutual TLS, from its bootstrap file.
	certFile, keyFile := filepath.Join(p.clientDir, "tls.crt"), filepath.Join(p.clientDir, "tls.key")
	res, err := xdsclient.Bootstrap{
		ServerAddr: lg.xdsAddr, NodeID: nodeID, Metadata: map[string]any{"pod_name": "grpc-mtls"},
		TLS: &xdsclient.TLSFiles{CAFile: p.caFile, CertFile: certFile, KeyFile: keyFile},
	}.Resolver()
	require.NoError(t, err)
	conn, err := grpc.NewClient("xds:///"+listenerName, grpc.WithResolvers(res),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	svc := testgrpc.NewTestServiceClient(conn)
	call := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		resp, err := svc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		if err != nil {
			return ""
		}
		return resp.GetServerId()
	}
	require.Eventually(t, func() bool { return call() == "A" }, waitFor, pollEvery,
		"RPCs of the mTLS xDS client land on backend A")
	n := lg.waitNode("InSync with the mTLS client", inSyncOn(sha, 1))
	// The proxy is counted under its certificate's identity; its pod name
	// only refines it.
	assert.Equal(t, "grpc-proxy/grpc-mtls", n.Proxies[0].Proxy)

	trustCA := p.ca.Pool()
	tlsCreds := func(certs ...tls.Certificate) credentials.TransportCredentials {
		return credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: trustCA, Certificates: certs})
	}

	// A raw stream with the client certificate that names the node gets
	// the listener, so the refusals below are the binding's doing.
	t.Run("right node", func(t *testing.T) {
		resp, err := firstAnswer(t, dialADSWith(t, lg.xdsAddr, tlsCreds(p.client.TLSCertificate(t))), "raw-mtls")
		require.NoError(t, err)
		assert.Equal(t, resourcev3.ListenerType, resp.GetTypeUrl())
		assert.Len(t, resp.GetResources(), 1)
	})

	// The certificate is bound to node IDs: a valid certificate that names
	// another node may not stream as this one.
	t.Run("wrong node", func(t *testing.T) {
		resp, err := firstAnswer(t, dialADSWith(t, lg.xdsAddr, tlsCreds(p.wrongClient.TLSCertificate(t))), "impostor")
		require.Error(t, err, "got a response: %v", resp)
		assert.Nil(t, resp)
		assert.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
		t.Logf("refused: %v", err)
		msg := status.Convert(err).Message()
		assert.Contains(t, msg, `node "`+nodeID+`" is not allowed`)
		assert.Contains(t, msg, `subject "`+wrongClientCN+`"`)
	})

	// Without a certificate legate trusts, the handshake fails: the
	// stream ends Unavailable without a response.
	// Go's TLS client sends no certificate that the server's list of
	// acceptable CAs does not cover, so the untrusted one is forced on it.
	untrusted := p.untrusted.Issue(t, testpki.Identity{CommonName: nodeID, DNSNames: []string{nodeID}}).TLSCertificate(t)
	presentUntrusted := credentials.NewTLS(&tls.Config{
		MinVersion: tls.VersionTLS12, RootCAs: trustCA,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &untrusted, nil },
	})
	for _, tc := range []struct {
		name  string
		creds credentials.TransportCredentials
	}{
		{"no client certificate", tlsCreds()},
		{"client certificate from another CA", presentUntrusted},
		{"plaintext", insecure.NewCredentials()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := firstAnswer(t, dialADSWith(t, lg.xdsAddr, tc.creds), "rejected")
			require.Error(t, err, "got a response: %v", resp)
			assert.Nil(t, resp)
			assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
			t.Logf("refused: %v", err)
		})
	}

	// None of the refused streams became a proxy of the node, and the
	// mTLS client still gets its RPCs through.
	n = lg.waitNode("InSync with only the mTLS client", inSyncOn(sha, 1))
	assert.Equal(t, "grpc-proxy/grpc-mtls", n.Proxies[0].Proxy)
	assert.Equal(t, "A", call())
}
