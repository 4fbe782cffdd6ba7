package standalone

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"
)

// testProxy is what a test proxy last received.
type testProxy struct {
	mu        sync.Mutex
	version   string
	resources int
}

// last returns the version and resource count of the last response.
func (p *testProxy) last() (string, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.version, p.resources
}

// startProxy runs a raw ADS client for node that asks for clusters and
// rejects (NACKs) every response whose serialized resources contain
// reject, accepting the others, as a proxy would. It stops with the test.
func startProxy(t *testing.T, addr, node, pod, reject string) *testProxy {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUserAgent("test-proxy/1.0"))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	require.NoError(t, err)
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		_ = conn.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the test proxy did not stop")
		}
	})
	meta, err := structpb.NewStruct(map[string]any{"pod_name": pod})
	require.NoError(t, err)
	nodeMsg := &corev3.Node{
		Id: node, Metadata: meta, UserAgentName: "test-proxy",
		UserAgentVersionType: &corev3.Node_UserAgentVersion{UserAgentVersion: "1.0"},
	}
	require.NoError(t, stream.Send(&discoveryv3.DiscoveryRequest{Node: nodeMsg, TypeUrl: resourcev3.ClusterType}))
	p := &testProxy{}
	go func() {
		defer close(done)
		acked := ""
		for {
			resp, err := stream.Recv()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.version, p.resources = resp.GetVersionInfo(), len(resp.GetResources())
			p.mu.Unlock()
			req := &discoveryv3.DiscoveryRequest{Node: nodeMsg, TypeUrl: resp.GetTypeUrl(), ResponseNonce: resp.GetNonce(), VersionInfo: acked}
			bad := false
			for _, r := range resp.GetResources() {
				bad = bad || bytes.Contains(r.GetValue(), []byte(reject))
			}
			if bad {
				req.ErrorDetail = &status.Status{Code: 3, Message: "cluster " + reject + ": unsupported by this proxy"}
			} else {
				acked = resp.GetVersionInfo()
				req.VersionInfo = acked
			}
			if stream.Send(req) != nil {
				return
			}
		}
	}()
	return p
}
