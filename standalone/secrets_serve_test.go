package standalone

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/legate-dev/legate/sds"
	"github.com/legate-dev/legate/serveconfig"
)

// marin3rTLS is a MARIN3R EnvoyConfig whose cluster uses an SDS secret
// generated from the TLS Secret "edge-cert".
const marin3rTLS = `apiVersion: marin3r.3scale.net/v1alpha1
kind: EnvoyConfig
metadata:
  name: edge
spec:
  nodeID: edge
  resources:
  - type: secret
    generateFromTlsSecret: edge-cert
  - type: cluster
    value:
      name: backend
      type: STATIC
      connect_timeout: 1s
      transport_socket:
        name: envoy.transport_sockets.tls
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext
          common_tls_context:
            tls_certificate_sds_secret_configs:
            - name: edge-cert
              sds_config: {ads: {}, resource_api_version: V3}
`

// TestServeSecretsFromFilesAndPushRotation runs a server on a Git
// repository holding a MARIN3R EnvoyConfig with generateFromTlsSecret: a
// raw ADS client receives the secret built from the files, and a rotated
// certificate under a new version once the directory is checked again.
func TestServeSecretsFromFilesAndPushRotation(t *testing.T) {
	repo := newLocalRepo(t)
	commit := func(doc string) {
		require.NoError(t, os.WriteFile(filepath.Join(repo.dir, "edge.yaml"), []byte(doc), 0o600))
		repo.git("add", "-A")
		repo.git("commit", "-q", "-m", "edge")
	}
	commit(marin3rTLS)
	secrets := t.TempDir()
	crt, key := selfSigned(t, "edge.example")
	writeSecret(t, secrets, "config/edge-cert", map[string][]byte{sds.TLSCertFile: crt, sds.TLSKeyFile: key})

	var logs syncBuffer
	s := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), SecretsDir: secrets, XDSInsecureSecrets: []string{"edge-cert", "other-cert"},
		Sources: []serveconfig.SourceConfig{{Name: "config", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}, Options{Log: logr.FromSlogHandler(slog.NewTextHandler(&logs, nil))})
	ticks := make(chan time.Time)
	s.secretTicks = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
	runServer(t, s)
	require.Eventually(t, func() bool {
		n, ok := s.engine.Node("edge")
		return ok && n.Published != nil
	}, 30*time.Second, 10*time.Millisecond, "the revision is published")

	conn, err := grpc.NewClient(s.XDSAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(scancel)
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(sctx)
	require.NoError(t, err)
	require.NoError(t, stream.Send(&discoveryv3.DiscoveryRequest{
		Node: &corev3.Node{Id: "edge"}, TypeUrl: resourcev3.SecretType, ResourceNames: []string{"edge-cert"},
	}))
	recvSecret := func() (*discoveryv3.DiscoveryResponse, *tlsv3.Secret) {
		t.Helper()
		resp, err := stream.Recv()
		require.NoError(t, err)
		require.Equal(t, resourcev3.SecretType, resp.GetTypeUrl())
		require.Len(t, resp.GetResources(), 1)
		var sec tlsv3.Secret
		require.NoError(t, resp.GetResources()[0].UnmarshalTo(&sec))
		require.NoError(t, stream.Send(&discoveryv3.DiscoveryRequest{
			TypeUrl: resourcev3.SecretType, ResourceNames: []string{"edge-cert"},
			VersionInfo: resp.GetVersionInfo(), ResponseNonce: resp.GetNonce(),
		}))
		return resp, &sec
	}

	first, sec := recvSecret()
	assert.Equal(t, "edge-cert", sec.GetName())
	assert.Equal(t, crt, sec.GetTlsCertificate().GetCertificateChain().GetInlineBytes())
	assert.Equal(t, key, sec.GetTlsCertificate().GetPrivateKey().GetInlineBytes())

	crt2, key2 := selfSigned(t, "edge.example")
	writeSecret(t, secrets, "config/edge-cert", map[string][]byte{sds.TLSCertFile: crt2, sds.TLSKeyFile: key2})
	ticks <- time.Time{}
	second, sec := recvSecret()
	assert.NotEqual(t, first.GetVersionInfo(), second.GetVersionInfo(), "a rotated certificate comes under a new version")
	assert.Equal(t, crt2, sec.GetTlsCertificate().GetCertificateChain().GetInlineBytes())
	assert.Equal(t, key2, sec.GetTlsCertificate().GetPrivateKey().GetInlineBytes())

	// A newer commit whose secret has no files yet waits: the last good
	// revision stays served, nothing is tainted, and nothing about the key
	// material leaks.
	commit(strings.ReplaceAll(marin3rTLS, "edge-cert", "other-cert"))
	require.True(t, s.Trigger("config"))
	require.Eventually(t, func() bool {
		n, ok := s.engine.Node("edge")
		return ok && len(n.History) == 2 && n.Waiting != nil
	}, 30*time.Second, 10*time.Millisecond, "the revision waits for its secret")
	n, _ := s.engine.Node("edge")
	assert.Equal(t, n.History[0].Hash, n.Waiting.Hash)
	assert.Contains(t, n.Waiting.Message, filepath.Join(secrets, "config", "other-cert", sds.TLSCertFile))
	assert.False(t, n.History[0].Tainted, "a missing secret does not taint the revision")
	assert.Equal(t, n.History[1].Hash, n.Published.Hash, "the last good revision stays published")
	assert.NotEqual(t, "InSync", string(n.State), "a node whose newest revision waits is not in sync")
	_, err = os.Stat(filepath.Join(secrets, "config", "other-cert"))
	require.ErrorIs(t, err, os.ErrNotExist)

	// Once the files exist the engine's next tick serves it, untainted.
	crt3, key3 := selfSigned(t, "other.example")
	writeSecret(t, secrets, "config/other-cert", map[string][]byte{sds.TLSCertFile: crt3, sds.TLSKeyFile: key3})
	require.Eventually(t, func() bool {
		n, ok := s.engine.Node("edge")
		return ok && n.Published != nil && n.Published.Hash == n.History[0].Hash
	}, 30*time.Second, 10*time.Millisecond, "the revision is served once its secret exists")
	n, _ = s.engine.Node("edge")
	assert.Nil(t, n.Waiting)
	assert.False(t, n.History[0].Tainted)
	for _, material := range [][]byte{crt, key, crt2, key2, crt3, key3} {
		assert.NotContains(t, logs.String(), string(material))
	}
}

// Over plaintext xDS, a secret holding a private key is not served unless
// the operator allowed it: the revision waits, saying why and what to do,
// and an ADS client asking for the secret gets nothing.
func TestKeyMaterialIsNotServedOverPlaintext(t *testing.T) {
	repo := newLocalRepo(t)
	require.NoError(t, os.WriteFile(filepath.Join(repo.dir, "edge.yaml"), []byte(marin3rTLS), 0o600))
	repo.git("add", "-A")
	repo.git("commit", "-q", "-m", "edge")
	secrets := t.TempDir()
	crt, key := selfSigned(t, "edge.example")
	writeSecret(t, secrets, "config/edge-cert", map[string][]byte{sds.TLSCertFile: crt, sds.TLSKeyFile: key})

	s := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), SecretsDir: secrets, XDSInsecureSecrets: []string{"some-other-secret"},
		Sources: []serveconfig.SourceConfig{{Name: "config", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}, Options{})
	runServer(t, s)
	require.Eventually(t, func() bool {
		n, ok := s.engine.Node("edge")
		return ok && n.Waiting != nil
	}, 30*time.Second, 10*time.Millisecond, "the revision waits")
	n, _ := s.engine.Node("edge")
	assert.Nil(t, n.Published, "nothing is served")
	assert.Contains(t, n.Waiting.Message, `secret "edge-cert"`)
	assert.Contains(t, n.Waiting.Message, "--xds-client-ca")
	assert.Contains(t, n.Waiting.Message, "--xds-insecure-secrets edge-cert")
	assert.NotContains(t, n.Waiting.Message, string(key))
	assert.False(t, n.History[0].Tainted)

	// A client asking for it is answered with no secret at all.
	conn, err := grpc.NewClient(s.XDSAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	t.Cleanup(cancel)
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	require.NoError(t, err)
	require.NoError(t, stream.Send(&discoveryv3.DiscoveryRequest{
		Node: &corev3.Node{Id: "edge"}, TypeUrl: resourcev3.SecretType, ResourceNames: []string{"edge-cert"},
	}))
	for {
		resp, err := stream.Recv()
		if err != nil {
			break // the deadline ends the stream: nothing more was sent
		}
		for _, r := range resp.GetResources() {
			var sec tlsv3.Secret
			require.NoError(t, r.UnmarshalTo(&sec))
			assert.Empty(t, sec.GetTlsCertificate().GetPrivateKey().GetInlineBytes(), "no private key over plaintext")
		}
	}
}
