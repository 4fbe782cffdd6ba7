package xdsclient

import (
	"encoding/json"
	"net"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
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

func TestBootstrapRequiresServerAndNode(t *testing.T) {
	_, err := Bootstrap{NodeID: "edge"}.JSON()
	require.ErrorContains(t, err, "server address")
	_, err = Bootstrap{ServerAddr: "127.0.0.1:1"}.JSON()
	require.ErrorContains(t, err, "node ID")
}

// recordingADS is a management server that only records the requests it
// receives; it never answers.
type recordingADS struct {
	discoveryv3.UnimplementedAggregatedDiscoveryServiceServer
	requests chan *discoveryv3.DiscoveryRequest
}

func (r *recordingADS) StreamAggregatedResources(stream discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	for {
		req, err := stream.Recv()
		if err != nil {
			return err
		}
		select {
		case r.requests <- req:
		default:
		}
	}
}

// TestResolverReachesServer proves a real grpc-go xDS client built from the
// bootstrap connects to the configured server, as the configured node, and
// subscribes to the listener named by the xds:/// target.
func TestResolverReachesServer(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ads := &recordingADS{requests: make(chan *discoveryv3.DiscoveryRequest, 16)}
	srv := grpc.NewServer()
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(srv, ads)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	res, err := Bootstrap{ServerAddr: lis.Addr().String(), NodeID: "bootstrap-test"}.Resolver()
	require.NoError(t, err)
	conn, err := grpc.NewClient("xds:///greeter.legate.test", grpc.WithResolvers(res),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	conn.Connect()

	select {
	case req := <-ads.requests:
		assert.Equal(t, "bootstrap-test", req.GetNode().GetId())
		assert.Equal(t, "type.googleapis.com/envoy.config.listener.v3.Listener", req.GetTypeUrl())
		assert.Equal(t, []string{"greeter.legate.test"}, req.GetResourceNames())
	case <-time.After(30 * time.Second):
		t.Fatal("the xDS client sent no request to the server within 30s")
	}
}
