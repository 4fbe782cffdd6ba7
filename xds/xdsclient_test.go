package xds

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/durationpb"

	grpcxds "google.golang.org/grpc/xds"

	"github.com/legate-dev/legate/render"
)

// startBackend runs a gRPC health service on loopback and returns its port.
func startBackend(t *testing.T) uint32 {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, health.NewServer())
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	_, port, err := net.SplitHostPort(lis.Addr().String())
	require.NoError(t, err)
	p, err := strconv.ParseUint(port, 10, 32)
	require.NoError(t, err)
	return uint32(p)
}

// grpcSnapshot routes xds:///svc to cluster "c" whose endpoint is port.
func grpcSnapshot(t *testing.T, version, cdsVersion string, cluster *clusterv3.Cluster, port uint32) Snapshot {
	return Snapshot{Version: version, Types: map[string]TypeSnapshot{
		resourcev3.ListenerType: {Version: "l1", Resources: []render.Resource{resource(t, "svc", apiListener(t, "svc", "rc"))}},
		resourcev3.RouteType:    {Version: "r1", Resources: []render.Resource{resource(t, "rc", routeTo("rc", "*", "c"))}},
		resourcev3.ClusterType:  {Version: cdsVersion, Resources: []render.Resource{resource(t, "c", cluster)}},
		resourcev3.EndpointType: {Version: "e1", Resources: []render.Resource{resource(t, "c", assignment("c", "127.0.0.1", port))}},
	}}
}

// TestGRPCXDSClient drives grpc-go's own xDS client (a real third-party
// consumer) through a good configuration, one it rejects, and a fix.
func TestGRPCXDSClient(t *testing.T) {
	ts := startServer(t, Options{})
	port := startBackend(t)
	require.NoError(t, ts.SetSnapshot("grpc-node", grpcSnapshot(t, "s1", "c1", edsCluster("c"), port)))

	bootstrap := fmt.Sprintf(`{
  "xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}], "server_features": ["xds_v3"]}],
  "node": {"id": "grpc-node", "metadata": {"pod_name": "grpc-client"}}
}`, ts.addr)
	builder, err := grpcxds.NewXDSResolverWithConfigForTesting([]byte(bootstrap))
	require.NoError(t, err)
	cc, err := grpc.NewClient("xds:///svc", grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithResolvers(builder))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	hc := healthpb.NewHealthClient(cc)
	serving := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
		return err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
	}
	require.Eventually(t, serving, waitFor, 50*time.Millisecond, "an RPC routed by legate's config reaches the backend")

	acked := func(typeURL, version, snap string) func() bool {
		return func() bool {
			return len(ts.rec.find(func(ev Event) bool {
				return ev.Kind == ACK && ev.Proxy == "grpc-client" && ev.Node == "grpc-node" &&
					ev.TypeURL == typeURL && ev.TypeVersion == version && ev.SnapshotVersion == snap
			})) > 0
		}
	}
	for typeURL, ver := range map[string]string{
		resourcev3.ListenerType: "l1", resourcev3.RouteType: "r1", resourcev3.ClusterType: "c1", resourcev3.EndpointType: "e1",
	} {
		require.Eventually(t, acked(typeURL, ver, "s1"), waitFor, pollEvery, "ACK of %s", typeURL)
	}

	// grpc-go accepts only EDS, LOGICAL_DNS and aggregate clusters: a
	// STATIC cluster, valid for Envoy, is NACKed.
	static := &clusterv3.Cluster{
		Name:                 "c",
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		ConnectTimeout:       durationpb.New(time.Second),
		LoadAssignment:       assignment("c", "127.0.0.1", port),
	}
	require.NoError(t, ts.SetSnapshot("grpc-node", grpcSnapshot(t, "s2", "c2", static, port)))
	nacked := func() []Event {
		return ts.rec.find(func(ev Event) bool { return ev.Kind == NACK && ev.TypeURL == resourcev3.ClusterType })
	}
	require.Eventually(t, func() bool { return len(nacked()) == 1 }, waitFor, pollEvery)
	ev := nacked()[0]
	assert.Equal(t, "c2", ev.TypeVersion)
	assert.Equal(t, "s2", ev.SnapshotVersion)
	assert.Equal(t, "grpc-client", ev.Proxy)
	t.Logf("grpc-go NACK: %s", ev.Error)
	assert.Contains(t, ev.Error, "unsupported cluster type")
	assert.True(t, serving(), "the client keeps its last good cluster")

	// More snapshots keeping the rejected cluster version never resend it,
	// and the proxy is reported as rejecting them too, with its own text.
	require.NoError(t, ts.SetSnapshot("grpc-node", grpcSnapshot(t, "s3", "c2", static, port)))
	require.Eventually(t, func() bool { return len(nacked()) == 2 }, waitFor, pollEvery)
	settled := nacked()[1]
	assert.Equal(t, "s3", settled.SnapshotVersion)
	assert.Equal(t, "c2", settled.TypeVersion)
	assert.Equal(t, ev.Error, settled.Error)
	cdsLabel := shortType(resourcev3.ClusterType)
	assert.InDelta(t, 2, testutil.ToFloat64(ts.metrics.responses.WithLabelValues(cdsLabel)), 0, "c1 and c2 once each")
	assert.InDelta(t, 1, testutil.ToFloat64(ts.metrics.nacks.WithLabelValues(cdsLabel)), 0, "one NACK on the wire")

	// The fix under a fresh version is sent and ACKed.
	require.NoError(t, ts.SetSnapshot("grpc-node", grpcSnapshot(t, "s4", "c3", edsCluster("c"), port)))
	require.Eventually(t, acked(resourcev3.ClusterType, "c3", "s4"), waitFor, pollEvery)
	assert.Len(t, nacked(), 2, "no further NACK: the rejected version was not resent")
	assert.InDelta(t, 3, testutil.ToFloat64(ts.metrics.responses.WithLabelValues(cdsLabel)), 0)
	assert.True(t, serving())
}
