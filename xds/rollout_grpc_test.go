package xds

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/durationpb"
	"sigs.k8s.io/yaml"

	grpcxds "google.golang.org/grpc/xds"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/sources"
)

// memStore is the smallest revisions.Store: this test is about the split
// on the wire, the stores have tests of their own.
type memStore struct{ mu sync.Mutex }

func (*memStore) Load(context.Context) ([]revisions.NodeData, error) { return nil, nil }
func (s *memStore) Commit(context.Context, revisions.Update) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return nil
}

// snapshotOf is what sds.Snapshot does for a publication without external
// secrets (sds imports xds, so an internal test cannot call it).
func snapshotOf(pub revisions.Publication) Snapshot {
	snap := Snapshot{Version: pub.Version, Owner: pub.Owner, Types: map[string]TypeSnapshot{}}
	for url, t := range pub.Types {
		snap.Types[url] = TypeSnapshot{Version: t.Version, Resources: t.Resources}
	}
	if pub.Candidate != nil {
		c := snapshotOf(*pub.Candidate)
		snap.Candidate, snap.CandidateShare = &c, pub.CandidateShare
	}
	return snap
}

func nodeConfig(t *testing.T, cluster *clusterv3.Cluster, port uint32) *render.NodeConfig {
	cfg := &render.NodeConfig{NodeID: "fleet", Types: map[string]render.TypeSet{}}
	all := ""
	for url, r := range map[string]render.Resource{
		resourcev3.ListenerType: resource(t, "svc", apiListener(t, "svc", "rc")),
		resourcev3.RouteType:    resource(t, "rc", routeTo("rc", "*", "c")),
		resourcev3.ClusterType:  resource(t, "c", cluster),
		resourcev3.EndpointType: resource(t, "c", assignment("c", "127.0.0.1", port)),
	} {
		sum := sha256.Sum256(r.Body)
		cfg.Types[url] = render.TypeSet{Hash: hex.EncodeToString(sum[:]), Resources: []render.Resource{r}}
	}
	for _, url := range []string{resourcev3.ListenerType, resourcev3.RouteType, resourcev3.ClusterType, resourcev3.EndpointType} {
		all += cfg.Types[url].Hash
	}
	sum := sha256.Sum256([]byte(all))
	cfg.Hash = hex.EncodeToString(sum[:])
	return cfg
}

// TestRolloutWithTwentyGRPCClients runs a rollout over twenty real grpc-go
// xDS clients of one node: at 10% exactly the bucketed clients get the new
// version, an untimed pause waits for promote, and a revision the canaries
// reject never reaches the other clients.
func TestRolloutWithTwentyGRPCClients(t *testing.T) {
	if testing.Short() {
		t.Skip("starts twenty xDS clients")
	}
	var policy rollout.Policy
	require.NoError(t, yaml.UnmarshalStrict([]byte("steps: [{proxies: 10%}, {pause: {}}]\nackTimeout: 30s"), &policy))
	plan, err := policy.Compile("")
	require.NoError(t, err)

	var srv *Server
	engine, err := revisions.New(revisions.Options{
		Store:     &memStore{},
		Publisher: revisions.PublisherFunc(func(node string, pub revisions.Publication) error { return srv.SetSnapshot(node, snapshotOf(pub)) }),
		Rollouts:  func(string) *rollout.Plan { return plan },
		Log:       logr.Discard(),
	})
	require.NoError(t, err)
	ts := startServer(t, Options{Observer: ObserverFunc(func(ev Event) { engine.ObserveProxy(ev) })})
	srv = ts.Server
	require.NoError(t, engine.Restore(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = engine.Run(ctx) }()

	port := startBackend(t)
	origin := func(c string) sources.Origin {
		return sources.Origin{Kind: sources.KindGit, Source: "fleet", Commit: c}
	}
	require.NoError(t, engine.Apply(ctx, "fleet", nodeConfig(t, edsCluster("c"), port), origin("c1")))

	canaries, others := podsBySide("fleet", 2)
	others = others[:0]
	for i := 0; len(others) < 18; i++ {
		pod := fmt.Sprintf("pod-%d", i)
		if !slices.Contains(canaries, pod) && !rollout.InShare(rollout.ProxyBucket("", pod, "fleet", ""), 1000) {
			others = append(others, pod)
		}
	}
	for _, pod := range append(slices.Clone(canaries), others...) {
		bootstrap := fmt.Sprintf(`{"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}], "server_features": ["xds_v3"]}],
  "node": {"id": "fleet", "metadata": {"pod_name": %q}}}`, ts.addr, pod)
		builder, err := grpcxds.NewXDSResolverWithConfigForTesting([]byte(bootstrap))
		require.NoError(t, err)
		cc, err := grpc.NewClient("xds:///svc", grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithResolvers(builder))
		require.NoError(t, err)
		t.Cleanup(func() { _ = cc.Close() })
		go func() {
			rctx, rcancel := context.WithTimeout(ctx, waitFor)
			defer rcancel()
			_, _ = healthpb.NewHealthClient(cc).Check(rctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
		}()
	}
	// ackedCDS is, per pod, the snapshot whose cluster set it ACKed last.
	ackedCDS := func() map[string]string {
		out := map[string]string{}
		for _, p := range srv.Proxies("fleet") {
			for _, ty := range p.Types {
				if ty.TypeURL == resourcev3.ClusterType {
					out[p.Proxy] = ty.AckedSnapshot
				}
			}
		}
		return out
	}
	allOn := func(pods []string, version string) func() bool {
		return func() bool {
			a := ackedCDS()
			for _, p := range pods {
				if a[p] != version {
					return false
				}
			}
			return true
		}
	}
	st, ok := engine.Node("fleet")
	require.True(t, ok)
	v1 := st.Published.Version
	require.Eventually(t, allOn(append(slices.Clone(canaries), others...), v1), waitFor, pollEvery, "every client ACKs the first revision")

	// A valid change: a new connect timeout.
	changed := edsCluster("c")
	changed.ConnectTimeout = durationpb.New(3 * time.Second)
	require.NoError(t, engine.Apply(ctx, "fleet", nodeConfig(t, changed, port), origin("c2")))
	require.Eventually(t, func() bool {
		ro, ok := engine.Rollout("fleet")
		return ok && ro.Status.Phase == rollout.PhasePaused
	}, waitFor, pollEvery, "the canaries ACK and the rollout waits at the untimed pause")
	ro, _ := engine.Rollout("fleet")
	assert.Equal(t, 2, ro.OnCandidate)
	assert.Equal(t, 18, ro.OnStable)
	a := ackedCDS()
	for _, p := range canaries {
		assert.NotEqual(t, v1, a[p], "canary %s is on the candidate", p)
	}
	for _, p := range others {
		assert.Equal(t, v1, a[p], "%s outside the 10%% stays on the stable revision", p)
	}
	cv := a[canaries[0]]
	_, err = engine.RolloutCommand(ctx, "fleet", rollout.CommandPromote)
	require.NoError(t, err)
	require.Eventually(t, allOn(append(slices.Clone(canaries), others...), cv), waitFor, pollEvery, "promoted to every client")

	// grpc-go rejects a STATIC cluster: the canaries NACK it, are put back,
	// and the other eighteen never see it.
	static := &clusterv3.Cluster{
		Name: "c", ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		ConnectTimeout: durationpb.New(time.Second), LoadAssignment: assignment("c", "127.0.0.1", port),
	}
	require.NoError(t, engine.Apply(ctx, "fleet", nodeConfig(t, static, port), origin("c3")))
	require.Eventually(t, func() bool {
		ro, _ := engine.Rollout("fleet")
		return ro.Status.Phase == rollout.PhaseFailed
	}, waitFor, pollEvery, "a canary's NACK fails the rollout")
	ro, _ = engine.Rollout("fleet")
	require.NotNil(t, ro.Status.Failure)
	assert.Contains(t, canaries, ro.Status.Failure.Proxy)
	assert.Contains(t, ro.Status.Failure.Message, "unsupported cluster type")
	assert.Equal(t, 1, ro.Status.Failure.Step)
	for _, p := range srv.Proxies("fleet") {
		if slices.Contains(others, p.Proxy) {
			for _, ty := range p.Types {
				assert.Nil(t, ty.LastNACK, "%s never received the rejected revision", p.Proxy)
			}
		}
	}
	// The rollout reads Failed as soon as it is decided; the node says
	// Rollback once the taint is stored and the canaries are put back.
	require.Eventually(t, func() bool {
		st, _ = engine.Node("fleet")
		return st.State == revisions.StateRollback
	}, waitFor, pollEvery, "the node rolls back")
	assert.True(t, st.History[0].Tainted)
	// A NACK leaves a canary's ACKed clusters where they were, so that
	// alone would hold from the start: each canary's stream has also
	// compared the stable snapshot it is served again.
	assert.Eventually(t, func() bool {
		a := ackedCDS()
		for _, p := range srv.Proxies("fleet") {
			if slices.Contains(canaries, p.Proxy) && (p.Compared != st.Published.Version || a[p.Proxy] != cv) {
				return false
			}
		}
		return true
	}, waitFor, pollEvery, "the canaries are back on the last good revision")
}
