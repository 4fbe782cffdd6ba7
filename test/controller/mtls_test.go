package controller_test

import (
	"context"
	"crypto/tls"
	"net"
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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/backend"
	"github.com/legate-dev/legate/test/internal/ctltest"
	"github.com/legate-dev/legate/test/internal/testpki"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
	"github.com/legate-dev/legate/test/xdsclient"
)

// adsError opens an ADS stream over creds as node, asks for names of
// typeURL, and returns the error that ends the stream (nil once a response
// came).
func adsError(t *testing.T, addr string, creds credentials.TransportCredentials, node, typeURL string, names ...string) error {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		return err
	}
	if err := stream.Send(&discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: node}, TypeUrl: typeURL, ResourceNames: names}); err != nil {
		_, err = stream.Recv()
		return err
	}
	_, err = stream.Recv()
	return err
}

// The controller serves xDS over mutual TLS: a proxy's certificate names
// the node IDs it may fetch, key material is served without any opt-in,
// a grpc-go client with its certificate is served its node, and a
// certificate for another node, another CA's certificate or no TLS at all
// are refused.
func TestControllerServesXDSOverMutualTLS(t *testing.T) {
	t.Parallel()
	cluster := envtest.Start(t)
	c := ctltest.Client(t, cluster.Config)
	dir := t.TempDir()
	ca := testpki.NewCA(t, "legate xDS CA")
	caFile := ca.Write(t, filepath.Join(dir, "ca.crt"))
	srvCert, srvKey := ca.Issue(t, testpki.Identity{CommonName: "legate", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}).Write(t, filepath.Join(dir, "server"))
	ctl := startWith(t, cluster.Config, func(o *controller.Options) {
		o.XDSTLSCert, o.XDSTLSKey, o.XDSClientCA = srvCert, srvKey, caFile
	})
	ctx := context.Background()

	ec, secret := withTLSSecret(t, ca, "one.example")
	require.NoError(t, c.Create(ctx, secret))
	require.NoError(t, c.Create(ctx, ec))
	edge := ca.Issue(t, testpki.Identity{CommonName: "edge-proxy", DNSNames: []string{"edge"}})
	clientTLS := func(kp testpki.KeyPair) credentials.TransportCredentials {
		return credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: ca.Pool(), Certificates: []tls.Certificate{kp.TLSCertificate(t)}})
	}
	proxy := newADSStream(t, ctl.XDSAddr(), clientTLS(edge), "edge", resourcev3.SecretType, "edge-cert")
	assert.Equal(t, string(secret.Data[corev1.TLSCertKey]), string(certOf(t, proxy.next(t))), "key material is served over mutual TLS without --xds-insecure-secrets")

	other := ca.Issue(t, testpki.Identity{CommonName: "other-proxy", DNSNames: []string{"other"}})
	err := adsError(t, ctl.XDSAddr(), clientTLS(other), "edge", resourcev3.SecretType, "edge-cert")
	assert.Equal(t, codes.PermissionDenied, status.Code(err), "a certificate for another node: %v", err)
	untrusted := testpki.NewCA(t, "untrusted").Issue(t, testpki.Identity{CommonName: "edge-proxy", DNSNames: []string{"edge"}})
	assert.Equal(t, codes.Unavailable, status.Code(adsError(t, ctl.XDSAddr(), clientTLS(untrusted), "edge", resourcev3.SecretType, "edge-cert")), "another CA's certificate")
	assert.Equal(t, codes.Unavailable, status.Code(adsError(t, ctl.XDSAddr(), insecure.NewCredentials(), "edge", resourcev3.SecretType, "edge-cert")), "plaintext")

	// grpc-go's xDS client with its own certificate (read through its
	// file watcher) is served its node and calls the backend.
	a := backend.Start(t, "a")
	require.NoError(t, c.Create(ctx, envoyConfig(t, "grpc-client",
		xdsyaml.APIListener("greeter", "greeter", "routes"),
		xdsyaml.RouteConfiguration("routes", "greeter", xdsyaml.Route{Cluster: "a"}),
		xdsyaml.EDSCluster("a"), xdsyaml.Endpoints("a", a.Port),
	)))
	clientDir := filepath.Join(dir, "grpc-client")
	cert, key := ca.Issue(t, testpki.Identity{CommonName: "grpc-proxy", DNSNames: []string{"grpc-client"}}).Write(t, clientDir)
	grpcClient := backend.DialBootstrap(t, xdsclient.Bootstrap{
		ServerAddr: ctl.XDSAddr(), NodeID: "grpc-client", Metadata: map[string]any{"pod_name": "pod-1"},
		TLS: &xdsclient.TLSFiles{CAFile: caFile, CertFile: cert, KeyFile: key},
	}, "greeter")
	require.Eventually(t, func() bool { return grpcClient.Call() == "a" }, 60*time.Second, 50*time.Millisecond, "grpc-go is served over mutual TLS")
	require.Eventually(t, func() bool {
		got := get(t, c, ec)
		return got.Status.CacheState != nil && *got.Status.CacheState == v1alpha1.CacheInSync
	}, 60*time.Second, 50*time.Millisecond)
}

// Beyond loopback the controller refuses to serve xDS without mutual TLS,
// and says what to set.
func TestControllerRefusesXDSBeyondLoopbackWithoutMutualTLS(t *testing.T) {
	t.Parallel()
	for _, opts := range []controller.Options{
		{XDSAddr: "0.0.0.0:18000"},
		{XDSAddr: "10.1.2.3:18000", XDSTLSCert: "c", XDSTLSKey: "k"},
	} {
		opts.Config, opts.Namespace = &rest.Config{Host: "https://127.0.0.1:1"}, "legate-system"
		_, err := controller.New(opts)
		require.Error(t, err, opts.XDSAddr)
		assert.Contains(t, err.Error(), "reaches beyond loopback without mutual TLS")
		assert.Contains(t, err.Error(), "--xds-client-ca")
	}
	_, err := controller.New(controller.Options{Config: &rest.Config{Host: "https://127.0.0.1:1"}, Namespace: "legate-system", XDSTLSCert: "c.pem"})
	assert.EqualError(t, err, "xdsTLS.keyFile (--xds-tls-key): required for xDS over TLS", "the words of legate serve")
}
