package controller_test

import (
	"context"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// adsStream is a raw ADS stream of one node subscribed to one type,
// answering every response with an ACK: a proxy as the xDS protocol
// describes it, for what grpc-go does not fetch (secrets, scoped routes).
type adsStream struct {
	stream  discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	node    *corev3.Node
	typeURL string
	names   []string
}

// newADSStream opens the stream over creds and subscribes node to names
// of typeURL (none: all). It closes when the test ends.
func newADSStream(t *testing.T, addr string, creds credentials.TransportCredentials, node, typeURL string, names ...string) *adsStream {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		_ = conn.Close()
	})
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	require.NoError(t, err)
	s := &adsStream{stream: stream, node: &corev3.Node{Id: node, Cluster: "test"}, typeURL: typeURL, names: names}
	require.NoError(t, stream.Send(&discoveryv3.DiscoveryRequest{Node: s.node, TypeUrl: typeURL, ResourceNames: names}))
	return s
}

// next waits at most a minute for the next response, ACKs it and returns
// it.
func (s *adsStream) next(t *testing.T) *discoveryv3.DiscoveryResponse {
	t.Helper()
	resp, err := s.recv(t)
	require.NoError(t, err)
	require.NoError(t, s.stream.Send(&discoveryv3.DiscoveryRequest{
		Node: s.node, TypeUrl: s.typeURL, ResourceNames: s.names,
		VersionInfo: resp.VersionInfo, ResponseNonce: resp.Nonce,
	}))
	return resp
}

// recv waits at most a minute for the next response or the stream's end.
func (s *adsStream) recv(t *testing.T) (*discoveryv3.DiscoveryResponse, error) {
	t.Helper()
	type received struct {
		resp *discoveryv3.DiscoveryResponse
		err  error
	}
	got := make(chan received, 1)
	go func() {
		resp, err := s.stream.Recv()
		got <- received{resp, err}
	}()
	select {
	case r := <-got:
		return r.resp, r.err
	case <-time.After(time.Minute):
		t.Fatal("no response within a minute")
		return nil, nil
	}
}
