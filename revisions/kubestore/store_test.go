package kubestore_test

import (
	"context"
	cryptorand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/kubestore"
	"github.com/legate-dev/legate/revisions/outboxtest"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/test/envtest"
)

const (
	node = "edge.example/one" // not a valid object name on purpose
	cds  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	eds  = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	rds  = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
)

type recorder struct {
	mu   sync.Mutex
	pubs []revisions.Publication
}

func (r *recorder) Publish(_ string, p revisions.Publication) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pubs = append(r.pubs, p)
	return nil
}

func (r *recorder) last() revisions.Publication {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pubs[len(r.pubs)-1]
}

func config(body string) *render.NodeConfig {
	sum := sha256.Sum256([]byte(body))
	h := hex.EncodeToString(sum[:])
	return &render.NodeConfig{
		NodeID: node, Hash: h, Types: map[string]render.TypeSet{
			cds: {Hash: h, Resources: []render.Resource{{Name: "c", Body: []byte(body), Source: render.Position{File: "c.yaml", Line: 2, Column: 3}}}},
		}, ExternalSecrets: []render.ExternalSecret{{Name: "cert", Ref: "default/cert", Kind: "tls", Source: render.Position{File: "c.yaml", Line: 9}}},
		ExternalEndpoints: []render.ExternalEndpoints{{ClusterName: "api", Namespace: "default", Selector: "app=api", TargetPort: "http", Source: render.Position{File: "c.yaml", Line: 12}}},
	}
}

func origin(commit string) sources.Origin {
	return sources.Origin{Kind: sources.KindGit, Source: "cfg", URL: "https://git.example/cfg.git", Ref: "main", Path: "envoy", Commit: commit}
}

// apiServer is the package's API server: each test stores its revisions
// in a namespace of its own there.
var apiServer envtest.Shared

func TestMain(m *testing.M) { os.Exit(apiServer.Run(m)) }

// newClient is a client of the package's API server that knows legate's
// types, and the namespace of the calling test.
func newClient(t *testing.T) (client.WithWatch, string) {
	t.Helper()
	cluster, ns := apiServer.Namespace(t)
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	c, err := client.NewWithWatch(cluster.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return c, ns
}

func start(t *testing.T, c client.Client, ns string) (*revisions.Engine, *recorder) {
	t.Helper()
	pub := &recorder{}
	e, err := revisions.New(revisions.Options{
		Store: kubestore.New(c, ns), Publisher: pub,
		// the API server keeps times to the second
		Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)),
	})
	require.NoError(t, err)
	require.NoError(t, e.Restore(context.Background()))
	return e, pub
}

// The engine runs on the API server: revisions become objects with their
// content in the spec and their state in the status, a taint survives a
// restart, the restarted engine serves the last good revision, and a
// follower rebuilds exactly what was published from the objects.
func TestEngineOnTheAPIServer(t *testing.T) {
	t.Parallel()
	c, ns := newClient(t)
	ctx := context.Background()

	e, pub := start(t, c, ns)
	good, bad := config("good"), config("bad")
	require.NoError(t, e.Apply(ctx, node, good, origin("sha1")))
	require.NoError(t, e.Apply(ctx, node, bad, origin("sha2")))

	var list v1alpha1.EnvoyConfigRevisionList
	// The unmarking of the revision served before trails the publication.
	require.Eventually(t, func() bool {
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil || len(list.Items) != 2 {
			return false
		}
		for _, obj := range list.Items {
			if obj.Status.Published != (obj.Spec.Hash == bad.Hash) {
				return false
			}
		}
		return true
	}, 30*time.Second, 10*time.Millisecond, "only the revision served is marked published")
	for _, obj := range list.Items {
		assert.Equal(t, node, obj.Spec.NodeID)
		assert.True(t, strings.HasPrefix(obj.Name, "legate-"))
		require.NotNil(t, obj.Status.Origin)
	}

	e.ObserveProxy(revisions.ProxyEvent{Kind: revisions.ProxyConnected, Node: node, Proxy: "p"})
	e.ObserveProxy(revisions.ProxyEvent{Kind: revisions.ProxyNACK, Node: node, Proxy: "p", SnapshotVersion: pub.last().Version, Error: "cluster c: bad"})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Run(runCtx) }()
	// The engine shows the rollback as soon as it decides it, before its
	// store write is done: wait for the write too before stopping Run.
	require.Eventually(t, func() bool {
		n, _ := e.Node(node)
		if n.State != revisions.StateRollback {
			return false
		}
		data, err := kubestore.Store{Client: c, Namespace: ns}.Load(ctx)
		return err == nil && len(data) == 1 && data[0].Record.Published == good.Hash
	}, 30*time.Second, 10*time.Millisecond)
	// The published flags follow the record: kubectl wait for them, under
	// MARIN3R's names, before stopping the writer.
	waitCondition(t, c, ns, kubestore.RevisionName(node, good.Hash), v1alpha1.MARIN3RRevisionPublished, metav1.ConditionTrue, "VersionPublished")
	waitCondition(t, c, ns, kubestore.RevisionName(node, bad.Hash), v1alpha1.MARIN3RRevisionTainted, metav1.ConditionTrue, "ResourcesFailing")
	cancel()
	<-done

	var badObj v1alpha1.EnvoyConfigRevision
	for _, obj := range list.Items {
		if obj.Spec.Hash == bad.Hash {
			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(&obj), &badObj))
		}
	}
	assert.True(t, badObj.Status.Tainted)
	require.NotNil(t, badObj.Status.Taint)
	assert.Contains(t, badObj.Status.Taint.Message, "cluster c: bad")
	assert.Equal(t, "sha2", badObj.Status.Origin.Commit)

	// A follower reads the objects and serves what the writer published.
	data, err := kubestore.Store{Client: c, Namespace: ns}.Load(ctx)
	require.NoError(t, err)
	require.Len(t, data, 1)
	var served *revisions.Revision
	for _, r := range data[0].Revisions {
		if r.Hash == data[0].Record.Published {
			served = r
		}
	}
	require.NotNil(t, served)
	rebuilt, err := revisions.PublicationOf(data[0].Record, served)
	require.NoError(t, err)
	assert.Equal(t, pub.last(), rebuilt)
	assert.Equal(t, good.ExternalSecrets, served.Config.ExternalSecrets)
	assert.Equal(t, good.ExternalEndpoints, served.Config.ExternalEndpoints)
	assert.Equal(t, origin("sha1"), served.Origin)

	// A restarted engine serves the last good revision, never the tainted one.
	e2, pub2 := start(t, c, ns)
	n, ok := e2.Node(node)
	require.True(t, ok)
	assert.Equal(t, good.Hash, n.Published.Hash)
	assert.Equal(t, good.Types[cds].Resources, pub2.last().Types[cds].Resources)
	require.NotNil(t, n.History[0].Taint)

	// The first engine's view of the record is now stale: its next write
	// is a conflict, not an overwrite.
	err = e.Apply(ctx, node, config("third"), origin("sha3"))
	require.ErrorIs(t, err, revisions.ErrConflict)

	// The conditions, as kubectl wait --for=condition=… sees them, under
	// legate's names and MARIN3R's.
	goodName, badName := kubestore.RevisionName(node, good.Hash), kubestore.RevisionName(node, bad.Hash)
	waitCondition(t, c, ns, badName, v1alpha1.MARIN3RRevisionTainted, metav1.ConditionTrue, "ResourcesFailing")
	waitCondition(t, c, ns, badName, v1alpha1.ConditionTainted, metav1.ConditionTrue, kubestore.ReasonRejected)
	waitCondition(t, c, ns, badName, v1alpha1.ConditionPublished, metav1.ConditionFalse, kubestore.ReasonTainted)
	waitCondition(t, c, ns, goodName, v1alpha1.MARIN3RRevisionPublished, metav1.ConditionTrue, "VersionPublished")
	waitCondition(t, c, ns, goodName, v1alpha1.ConditionTainted, metav1.ConditionFalse, kubestore.ReasonNotTainted)
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: badName}, &badObj))
	taintedAt := meta.FindStatusCondition(badObj.Status.Conditions, v1alpha1.ConditionTainted).LastTransitionTime
	assert.Contains(t, meta.FindStatusCondition(badObj.Status.Conditions, v1alpha1.ConditionTainted).Message, "cluster c: bad")
	assert.Equal(t, badObj.Generation, meta.FindStatusCondition(badObj.Status.Conditions, v1alpha1.ConditionTainted).ObservedGeneration)

	// Clearing the taint publishes the newer revision again.
	require.NoError(t, e2.ClearTaint(ctx, node, bad.Hash))
	waitCondition(t, c, ns, badName, v1alpha1.MARIN3RRevisionTainted, metav1.ConditionFalse, kubestore.ReasonUntainted)
	waitCondition(t, c, ns, badName, v1alpha1.MARIN3RRevisionPublished, metav1.ConditionTrue, "VersionPublished")
	waitCondition(t, c, ns, goodName, v1alpha1.ConditionPublished, metav1.ConditionFalse, kubestore.ReasonSuperseded)
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: badName}, &badObj))
	assert.False(t, meta.FindStatusCondition(badObj.Status.Conditions, v1alpha1.ConditionTainted).LastTransitionTime.Before(&taintedAt), "the transition back is later")
}

// waitCondition is kubectl wait --for=condition=typ on an
// EnvoyConfigRevision: it polls until the condition has status and reason,
// with a deadline.
func waitCondition(t *testing.T, c client.Client, ns, name, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	var last *metav1.Condition
	ok := assert.Eventually(t, func() bool {
		var obj v1alpha1.EnvoyConfigRevision
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &obj); err != nil {
			return false
		}
		cond := meta.FindStatusCondition(obj.Status.Conditions, typ)
		if cond == nil {
			return false
		}
		last = cond
		return cond.Status == status && cond.Reason == reason
	}, 30*time.Second, 20*time.Millisecond)
	if !ok {
		require.FailNow(t, "condition not reached", "%s=%s (%s) of %s; last seen %+v", typ, status, reason, name, last)
	}
}

// A configuration larger than an object may hold is refused before it is
// served.
func TestRevisionsLargerThanAnObjectAreRefused(t *testing.T) {
	t.Parallel()
	c, ns := newClient(t)
	e, pub := start(t, c, ns)
	noise := make([]byte, kubestore.MaxRevisionBytes) // random: compression does not help
	_, _ = cryptorand.Read(noise)
	err := e.Apply(context.Background(), node, config(string(noise)), origin("sha1"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "at most 1400000")
	assert.Empty(t, pub.pubs)
}

// tenThousandRoutes is a node with one route configuration of n routes,
// and n EDS clusters with their load assignments, each in its protobuf
// wire form.
func tenThousandRoutes(t *testing.T, n int) *render.NodeConfig {
	t.Helper()
	rc := &routev3.RouteConfiguration{Name: "routes", VirtualHosts: []*routev3.VirtualHost{{Name: "all", Domains: []string{"*"}}}}
	nc := &render.NodeConfig{NodeID: node, Types: map[string]render.TypeSet{}}
	add := func(url, name string, m proto.Message) {
		body, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		require.NoError(t, err)
		set := nc.Types[url]
		set.Resources = append(set.Resources, render.Resource{Name: name, Body: body, Source: render.Position{File: "envoy/big.yaml", Line: len(set.Resources) + 1}})
		nc.Types[url] = set
	}
	for i := range n {
		svc := fmt.Sprintf("svc-%05d", i)
		rc.VirtualHosts[0].Routes = append(rc.VirtualHosts[0].Routes, &routev3.Route{
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/" + svc + "/"}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: svc}}},
		})
		add(cds, svc, &clusterv3.Cluster{Name: svc, ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS}})
		add(eds, svc, &endpointv3.ClusterLoadAssignment{ClusterName: svc, Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{{
			HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: &corev3.Address{Address: &corev3.Address_SocketAddress{
				SocketAddress: &corev3.SocketAddress{Address: fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255), PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 8080}},
			}}}},
		}}}}})
	}
	add(rds, "routes", rc)
	for url, set := range nc.Types {
		set.Hash = render.HashResources(set.Resources)
		nc.Types[url] = set
	}
	nc.Hash = render.HashNode(nc)
	return nc
}

// A configuration of 10 000 routes, clusters and load assignments is more
// than an object holds as it is; the store compresses it, and a restarted
// engine serves it again from the object.
func TestTenThousandRoutesFitOneRevision(t *testing.T) {
	t.Parallel()
	c, ns := newClient(t)
	ctx := context.Background()
	e, _ := start(t, c, ns)
	big := tenThousandRoutes(t, 10000)
	size, limit := kubestore.Store{}.RevisionSize(big)
	t.Logf("10 000 routes: %d bytes as they are, %d bytes stored, limit %d", revisions.EncodedSize(big), size, limit)
	require.Greater(t, revisions.EncodedSize(big), kubestore.MaxRevisionBytes, "the test needs a configuration past the plain limit")
	require.NoError(t, e.Apply(ctx, node, big, origin("sha-big")))

	var obj v1alpha1.EnvoyConfigRevision
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: kubestore.RevisionName(node, big.Hash)}, &obj))
	assert.Empty(t, obj.Spec.Resources)
	assert.NotEmpty(t, obj.Spec.CompressedResources)

	e2, pub2 := start(t, c, ns)
	n, ok := e2.Node(node)
	require.True(t, ok)
	assert.Equal(t, big.Hash, n.Published.Hash)
	assert.Equal(t, big.Types[rds].Resources, pub2.last().Types[rds].Resources, "the restored content is the content applied")
	assert.Len(t, pub2.last().Types[eds].Resources, 10000)
}

// The outbox of undelivered commit statuses lives in the API server, so
// it survives a controller restart (a new Store on the same cluster).
func TestOutboxInTheAPIServer(t *testing.T) {
	t.Parallel()
	c, ns := newClient(t)
	outboxtest.Run(t, func(*testing.T) revisions.Outbox { return kubestore.Store{Client: c, Namespace: ns} })
}

// Writers that race on the outbox lose none of each other's entries, and
// the bound refuses more than MaxOutboxEntries with an error.
func TestOutboxConcurrentWritersAndBound(t *testing.T) {
	t.Parallel()
	c, ns := newClient(t)
	s := kubestore.Store{Client: c, Namespace: ns}
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 5 {
				_, err := s.OutboxPut(ctx, fmt.Sprintf("w%d/%d", i, j), []byte("x"))
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	list, err := s.OutboxList(ctx, 0)
	require.NoError(t, err)
	assert.Len(t, list, 20, "no entry lost to a concurrent write")

	for i := len(list); i < kubestore.MaxOutboxEntries; i++ {
		_, err := s.OutboxPut(ctx, fmt.Sprintf("fill/%d", i), []byte("x"))
		require.NoError(t, err)
	}
	_, err = s.OutboxPut(ctx, "one/too/many", []byte("x"))
	assert.ErrorContains(t, err, "its limit")
	_, err = s.OutboxPut(ctx, "w0/0", []byte("replaced"))
	assert.NoError(t, err, "replacing a queued entry needs no room")
}

// The proxies of many nodes reject their publications at once: the engine
// stores the taints and rollbacks of several nodes side by side on the
// API server (its nodes' commits run concurrently, which the race pass
// checks), and every node ends rolled back in the engine and in the store.
func TestManyNodesRollBackTogetherOnTheAPIServer(t *testing.T) {
	t.Parallel()
	c, ns := newClient(t)
	ctx := context.Background()
	e, pub := start(t, c, ns)
	of := func(id, body string) *render.NodeConfig {
		cfg := config(body)
		cfg.NodeID = id
		return cfg
	}

	const nodes = 12
	ids := make([]string, nodes)
	good := make(map[string]string, nodes)
	for i := range ids {
		id := fmt.Sprintf("fleet-%02d", i)
		ids[i] = id
		require.NoError(t, e.Apply(ctx, id, of(id, "good"), origin("sha1")))
		good[id] = of(id, "good").Hash
		require.NoError(t, e.Apply(ctx, id, of(id, "bad"), origin("sha2")))
		p := pub.last()
		e.ObserveProxy(revisions.ProxyEvent{Kind: revisions.ProxyConnected, Node: id, Proxy: "p-" + id})
		e.ObserveProxy(revisions.ProxyEvent{Kind: revisions.ProxyNACK, Node: id, Proxy: "p-" + id, SnapshotVersion: p.Version, Error: "cluster c: bad"})
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Run(runCtx) }()
	defer func() { cancel(); <-done }()

	var last string
	require.Eventually(t, func() bool {
		data, err := kubestore.Store{Client: c, Namespace: ns}.Load(ctx)
		if err != nil {
			last = err.Error()
			return false
		}
		rolledBack := 0
		for _, d := range data {
			if d.Record.Published == good[d.Record.Node] {
				rolledBack++
			}
		}
		last = fmt.Sprintf("%d of %d nodes' stored records serve their good revision", rolledBack, nodes)
		return rolledBack == nodes
	}, 60*time.Second, 20*time.Millisecond, "every node's rollback is stored: %s", &last)
	for _, id := range ids {
		n, ok := e.Node(id)
		require.True(t, ok, id)
		assert.Equal(t, revisions.StateRollback, n.State, id)
		require.NotNil(t, n.History[0].Taint, id)
		assert.Contains(t, n.History[0].Taint.Message, "cluster c: bad", id)
	}
}
