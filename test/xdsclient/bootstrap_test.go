package xdsclient

import (
	"crypto/tls"
	"encoding/json"
	"net"
	"path/filepath"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/credentials/tls/certprovider/pemfile"
	"google.golang.org/grpc/peer"

	"github.com/legate-dev/legate/test/internal/testpki"
)

func TestBootstrapJSON(t *testing.T) {
	data, err := Bootstrap{ServerAddr: "127.0.0.1:18000", NodeID: "edge", Metadata: map[string]any{"pod_name": "p-1"}}.JSON()
	require.NoError(t, err)
	var got struct {
		XDSServers []struct {
			ServerURI      string   `json:"server_uri"`
			ServerFeatures []string `json:"server_features"`
			ChannelCreds   []struct {
				Type string `json:"type"`
			} `json:"channel_creds"`
		} `json:"xds_servers"`
		Node struct {
			ID       string         `json:"id"`
			Metadata map[string]any `json:"metadata"`
		} `json:"node"`
	}
	require.NoError(t, json.Unmarshal(data, &got))
	require.Len(t, got.XDSServers, 1)
	assert.Equal(t, "127.0.0.1:18000", got.XDSServers[0].ServerURI)
	assert.Equal(t, []string{"xds_v3"}, got.XDSServers[0].ServerFeatures)
	assert.Equal(t, "insecure", got.XDSServers[0].ChannelCreds[0].Type)
	assert.Equal(t, "edge", got.Node.ID)
	assert.Equal(t, "p-1", got.Node.Metadata["pod_name"])
}

// channelCreds decodes the channel credentials of the only xDS server.
func channelCreds(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var got struct {
		XDSServers []struct {
			ChannelCreds []map[string]any `json:"channel_creds"`
		} `json:"xds_servers"`
	}
	require.NoError(t, json.Unmarshal(data, &got))
	require.Len(t, got.XDSServers, 1)
	return got.XDSServers[0].ChannelCreds
}

func TestBootstrapJSONTLS(t *testing.T) {
	for _, tc := range []struct {
		name string
		tls  TLSFiles
		want map[string]any
	}{{
		name: "mutual TLS",
		tls:  TLSFiles{CAFile: "/pki/ca.crt", CertFile: "/pki/client/tls.crt", KeyFile: "/pki/client/tls.key"},
		want: map[string]any{
			"ca_certificate_file": "/pki/ca.crt",
			"certificate_file":    "/pki/client/tls.crt",
			"private_key_file":    "/pki/client/tls.key",
		},
	}, {
		name: "server verified, no client certificate",
		tls:  TLSFiles{CAFile: "/pki/ca.crt"},
		want: map[string]any{"ca_certificate_file": "/pki/ca.crt"},
	}, {
		name: "system roots and a client certificate",
		tls:  TLSFiles{CertFile: "/pki/client/tls.crt", KeyFile: "/pki/client/tls.key"},
		want: map[string]any{"certificate_file": "/pki/client/tls.crt", "private_key_file": "/pki/client/tls.key"},
	}, {
		name: "system roots only",
		want: map[string]any{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			files := tc.tls
			data, err := Bootstrap{ServerAddr: "127.0.0.1:18000", NodeID: "edge", TLS: &files}.JSON()
			require.NoError(t, err)
			assert.Equal(t, []map[string]any{{"type": "tls", "config": tc.want}}, channelCreds(t, data))
		})
	}
}

func TestBootstrapTLSRejectsWhatGRPCRejects(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		tls        TLSFiles
	}{
		{name: "certificate without key", tls: TLSFiles{CertFile: "/pki/tls.crt"}, want: "both CertFile and KeyFile"},
		{name: "key without certificate", tls: TLSFiles{KeyFile: "/pki/tls.key"}, want: "both CertFile and KeyFile"},
		{name: "two directories", tls: TLSFiles{CertFile: "/pki/a/tls.crt", KeyFile: "/pki/b/tls.key"}, want: "one directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := tc.tls
			_, err := Bootstrap{ServerAddr: "127.0.0.1:18000", NodeID: "edge", TLS: &files}.JSON()
			require.ErrorContains(t, err, tc.want)
			// grpc-go's own file watcher refuses the same files.
			_, gerr := pemfile.NewProvider(pemfile.Options{CertFile: files.CertFile, KeyFile: files.KeyFile, RootFile: files.CAFile})
			require.Error(t, gerr, "grpc-go accepts what the helper refuses")
		})
	}
	t.Run("one directory", func(t *testing.T) {
		dir := t.TempDir()
		files := TLSFiles{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}
		_, err := Bootstrap{ServerAddr: "127.0.0.1:18000", NodeID: "edge", TLS: &files}.JSON()
		require.NoError(t, err)
		p, gerr := pemfile.NewProvider(pemfile.Options{CertFile: files.CertFile, KeyFile: files.KeyFile})
		require.NoError(t, gerr, "grpc-go accepts what the helper accepts")
		p.Close()
	})
}

func TestBootstrapRequiresServerAndNode(t *testing.T) {
	_, err := Bootstrap{NodeID: "edge"}.JSON()
	require.ErrorContains(t, err, "server address")
	_, err = Bootstrap{ServerAddr: "127.0.0.1:1"}.JSON()
	require.ErrorContains(t, err, "node ID")
}

// seenRequest is a request the recording server received and the common
// name of the client certificate of its stream ("" without one).
type seenRequest struct {
	req      *discoveryv3.DiscoveryRequest
	clientCN string
}

// recordingADS is a management server that only records the requests it
// receives; it never answers.
type recordingADS struct {
	discoveryv3.UnimplementedAggregatedDiscoveryServiceServer
	requests chan seenRequest
}

func (r *recordingADS) StreamAggregatedResources(stream discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	var cn string
	if p, ok := peer.FromContext(stream.Context()); ok {
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(info.State.PeerCertificates) > 0 {
			cn = info.State.PeerCertificates[0].Subject.CommonName
		}
	}
	for {
		req, err := stream.Recv()
		if err != nil {
			return err
		}
		select {
		case r.requests <- seenRequest{req: req, clientCN: cn}:
		default:
		}
	}
}

// startRecordingADS serves a recordingADS on loopback with opts until the
// test ends and returns it with its address.
func startRecordingADS(t *testing.T, opts ...grpc.ServerOption) (*recordingADS, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ads := &recordingADS{requests: make(chan seenRequest, 16)}
	srv := grpc.NewServer(opts...)
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(srv, ads)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return ads, lis.Addr().String()
}

// firstRequest dials xds:///greeter.legate.test with a grpc-go xDS client
// built from bs and returns the first request the server receives.
func firstRequest(t *testing.T, ads *recordingADS, bs Bootstrap) seenRequest {
	t.Helper()
	res, err := bs.Resolver()
	require.NoError(t, err)
	conn, err := grpc.NewClient("xds:///greeter.legate.test", grpc.WithResolvers(res),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	conn.Connect()

	select {
	case seen := <-ads.requests:
		return seen
	case <-time.After(30 * time.Second):
		require.FailNow(t, "the xDS client sent no request to the server within 30s")
		return seenRequest{}
	}
}

// TestResolverReachesServer proves a real grpc-go xDS client built from the
// bootstrap connects to the configured server, as the configured node, and
// subscribes to the listener named by the xds:/// target.
func TestResolverReachesServer(t *testing.T) {
	ads, addr := startRecordingADS(t)
	seen := firstRequest(t, ads, Bootstrap{ServerAddr: addr, NodeID: "bootstrap-test"})
	assert.Equal(t, "bootstrap-test", seen.req.GetNode().GetId())
	assert.Equal(t, "type.googleapis.com/envoy.config.listener.v3.Listener", seen.req.GetTypeUrl())
	assert.Equal(t, []string{"greeter.legate.test"}, seen.req.GetResourceNames())
	assert.Empty(t, seen.clientCN)
}

// TestResolverReachesServerOverMutualTLS proves grpc-go accepts the TLS
// channel credentials the bootstrap writes: the xDS client verifies the
// server's certificate with CAFile and presents CertFile to a server that
// requires a client certificate.
func TestResolverReachesServerOverMutualTLS(t *testing.T) {
	ca := testpki.NewCA(t, "xdsclient test CA")
	dir := t.TempDir()
	server := ca.Issue(t, testpki.Identity{CommonName: "ads", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	certFile, keyFile := ca.Issue(t, testpki.Identity{CommonName: "tls-client"}).Write(t, filepath.Join(dir, "client"))
	tlsCfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{server.TLSCertificate(t)},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    ca.Pool(),
	}
	ads, addr := startRecordingADS(t, grpc.Creds(credentials.NewTLS(tlsCfg)))

	seen := firstRequest(t, ads, Bootstrap{ServerAddr: addr, NodeID: "tls-test", TLS: &TLSFiles{
		CAFile:   ca.Write(t, filepath.Join(dir, "ca.crt")),
		CertFile: certFile,
		KeyFile:  keyFile,
	}})
	assert.Equal(t, "tls-test", seen.req.GetNode().GetId())
	assert.Equal(t, "tls-client", seen.clientCN, "the stream carries the bootstrap's client certificate")
}
