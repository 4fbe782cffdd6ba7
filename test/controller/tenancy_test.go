package controller_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
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
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/pki/kubepki"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/backend"
	"github.com/legate-dev/legate/test/internal/ctltest"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
)

// tenant creates namespace and a user with edit rights on legate's
// objects, Pods and Secrets there only, and returns a client that acts as
// that user (kubectl --as).
func tenant(t *testing.T, admin client.Client, cfg *rest.Config, namespace, user string) client.Client {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))
	require.NoError(t, admin.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "edit"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"legate.dev"}, Resources: []string{"envoyconfigs", "envoysources"}, Verbs: []string{"*"}},
			{APIGroups: []string{""}, Resources: []string{"pods", "secrets"}, Verbs: []string{"*"}},
		},
	}))
	require.NoError(t, admin.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "edit"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}))
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: user}
	scheme, err := controller.Scheme()
	require.NoError(t, err)
	c, err := client.New(as, client.Options{Scheme: scheme})
	require.NoError(t, err)
	// The user's rights stop at the namespace.
	err = c.List(ctx, &v1alpha1.EnvoyConfigList{}, client.InNamespace("default"))
	require.Error(t, err, "%s reads nothing outside %s", user, namespace)
	return c
}

// proxyCreds waits for the proxy certificate legate issues to an injected
// Pod of namespace for node and returns it as gRPC credentials.
func proxyCreds(t *testing.T, c client.Client, namespace, node string) credentials.TransportCredentials {
	t.Helper()
	var s corev1.Secret
	require.Eventually(t, func() bool {
		return c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: pki.ProxySecretName(node)}, &s) == nil
	}, 30*time.Second, 50*time.Millisecond, "the proxy certificate of %s in %s is issued", node, namespace)
	pair, err := tls.X509KeyPair(s.Data[pki.ProxyCertKey], s.Data[pki.ProxyKeyKey])
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(s.Data[pki.ProxyCAKey]))
	return credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, Certificates: []tls.Certificate{pair}})
}

// openStream opens an ADS stream for node and sends its first request; it
// returns a channel that receives every response and, last, the stream's
// error.
func openStream(t *testing.T, addr string, creds credentials.TransportCredentials, node string) (<-chan *discoveryv3.DiscoveryResponse, <-chan error) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	require.NoError(t, err)
	require.NoError(t, stream.Send(&discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: node}, TypeUrl: resourcev3.ListenerType}))
	resps, errc := make(chan *discoveryv3.DiscoveryResponse, 16), make(chan error, 1)
	go func() {
		for {
			resp, err := stream.Recv()
			if err != nil {
				errc <- err
				return
			}
			resps <- resp
		}
	}()
	return resps, errc
}

func payConfig(t *testing.T, namespace string, port int) *v1alpha1.EnvoyConfig {
	ec := envoyConfig(t, "pay-edge",
		xdsyaml.APIListener("greeter", "greeter", "routes"),
		xdsyaml.RouteConfiguration("routes", "greeter", xdsyaml.Route{Cluster: "a"}),
		xdsyaml.EDSCluster("a"), xdsyaml.Endpoints("a", port),
	)
	ec.Namespace, ec.Name = namespace, "pay"
	return ec
}

// Two tenants with edit rights in their own namespaces only, through the
// real API server and its admission chain, legate's PKI and real ADS
// streams: a node ID taken early by team-b is not pushed team-a's
// configuration (the open stream is closed before it receives anything);
// team-b's object naming team-a's node is refused at admission without a
// word about team-a; once team-a deletes its object, the node is free.
func TestTenantsCannotReachEachOther(t *testing.T) {
	t.Parallel()
	admin, cluster, ctl := admitted(t, func(o *controller.Options) {
		o.PKI = &kubepki.Options{CASecret: "legate-ca", XDSSecret: "legate-xds-tls", XDSHosts: []string{"127.0.0.1"}}
	})
	ctx := context.Background()
	alice := tenant(t, admin, cluster.Config, "team-a", "alice")
	bob := tenant(t, admin, cluster.Config, "team-b", "bob")
	a := backend.Start(t, "a")

	// team-b takes the node ID before anybody configures it.
	require.NoError(t, bob.Create(ctx, injectedPod("team-b", "pay-edge")))
	early := proxyCreds(t, admin, "team-b", "pay-edge")
	resps, errc := openStream(t, ctl.XDSAddr(), early, "pay-edge")

	// team-a configures it: the early stream is closed, and never gets it.
	require.NoError(t, alice.Create(ctx, payConfig(t, "team-a", a.Port)))
	select {
	case err := <-errc:
		assert.Equal(t, codes.PermissionDenied, status.Code(err), "got %v", err)
		assert.NotContains(t, err.Error(), "team-a")
	case resp := <-resps:
		t.Fatalf("team-b's stream received team-a's configuration (version %s)", resp.GetVersionInfo())
	case <-time.After(60 * time.Second):
		t.Fatal("team-b's stream was neither closed nor served")
	}
	assert.Empty(t, resps, "nothing was sent before the stream was closed")
	var ec v1alpha1.EnvoyConfig
	require.Eventually(t, func() bool {
		require.NoError(t, alice.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "pay"}, &ec))
		return meta.IsStatusConditionTrue(ec.Status.Conditions, v1alpha1.ConditionReady) || (ec.Status.Proxies != nil && ec.Status.PublishedVersion != nil)
	}, 60*time.Second, 100*time.Millisecond, "team-a's configuration is published")
	require.NotNil(t, ec.Status.Proxies)
	assert.Zero(t, ec.Status.Proxies.Connected, "team-b's stream is not counted as team-a's proxy")
	assert.Equal(t, codes.PermissionDenied, status.Code(adsError(t, ctl.XDSAddr(), early, "pay-edge", resourcev3.ListenerType)), "a new stream of team-b is refused too")

	// team-b cannot squat the node with an object of its own, and is told
	// nothing of team-a.
	msg := refusal(t, bob.Create(ctx, payConfig(t, "team-b", a.Port)))
	assert.Contains(t, msg, `node ID "pay-edge" belongs to another namespace`)
	assert.NotContains(t, msg, "team-a")
	// A Pod of team-b for the node is refused its certificate, the same way.
	msg = refusal(t, bob.Create(ctx, injectedPod("team-b", "pay-edge")))
	assert.Contains(t, msg, "belongs to another namespace")
	assert.NotContains(t, msg, "team-a")

	// Deleting the owning object releases the node at once.
	require.NoError(t, alice.Delete(ctx, &ec))
	require.Eventually(t, func() bool {
		return bob.Create(ctx, payConfig(t, "team-b", a.Port)) == nil
	}, 30*time.Second, 200*time.Millisecond, "a released node may be configured by another namespace")
}

// The owner of a node is stored with the node record: a restarted
// controller honours it whatever it renders first, and releases it when
// the owning object was deleted while no controller ran. team-b's object for
// team-c's node (stored while admission was off) sorts first, yet after the
// restart team-c's proxy is still served team-c's configuration and
// team-b's object reports that the node belongs to another namespace.
func TestOwnershipSurvivesARestart(t *testing.T) {
	t.Parallel()
	cluster := envtest.Start(t)
	admin := ctltest.Client(t, cluster.Config)
	ctx := context.Background()
	a, b := backend.Start(t, "a"), backend.Start(t, "b")
	namespaces(t, admin, "team-b", "team-c")
	first := startReplicaless(t, cluster.Config)
	mine := payConfig(t, "team-c", a.Port)
	require.NoError(t, admin.Create(ctx, mine))
	proxy := backend.Dial(t, first.ctl.XDSAddr(), "pay-edge", "pod-1", "greeter")
	require.Eventually(t, func() bool { return proxy.Call() == "a" }, 60*time.Second, 50*time.Millisecond)
	waitPublished(t, admin, mine, v1alpha1.CacheInSync) // stored, not only served
	first.stop()

	theirs := payConfig(t, "team-b", b.Port)
	require.NoError(t, admin.Create(ctx, theirs))
	second := startReplicaless(t, cluster.Config)
	again := backend.Dial(t, second.ctl.XDSAddr(), "pay-edge", "pod-2", "greeter")
	got := refusedAsForeign(t, admin, theirs, "team-c")
	assert.Nil(t, got.Status.PublishedVersion, "nothing of team-c's node reaches team-b's status")
	assert.Empty(t, got.Status.Commit)
	assert.Empty(t, got.Status.ConfigRevisions)
	// The new stream is served from the stored revisions once it connects;
	// then it stays with team-c's configuration.
	require.Eventually(t, func() bool { return again.Call() == "a" }, 60*time.Second, 50*time.Millisecond, "team-c's configuration is served after the restart")
	for range 20 {
		require.Equal(t, "a", again.Call(), "team-c's configuration stays served")
	}

	// team-c's object is deleted while no controller runs: the next one
	// finds its stored owner gone, releases the node, and team-b takes it.
	second.stop()
	require.NoError(t, admin.Delete(ctx, mine))
	third := startReplicaless(t, cluster.Config)
	waitPublished(t, admin, theirs, v1alpha1.CacheInSync)
	assert.Equal(t, "team-b/pay@1", get(t, admin, theirs).Status.Commit)
	last := backend.Dial(t, third.ctl.XDSAddr(), "pay-edge", "pod-3", "greeter")
	require.Eventually(t, func() bool { return last.Call() == "b" }, 60*time.Second, 50*time.Millisecond, "team-b's configuration is served")
}

// A leader failover keeps every node with its owner: team-c's proxy on a
// follower is served team-c's configuration; team-b's objects for the same
// nodes (stored while admission was off) are refused; the leader is
// stopped, and the new leader, which renders the objects in no set order,
// still serves team-c's configuration to the open stream and reports
// every team-b object's conflict (five nodes: a leader that let whoever
// renders first win would hand at least one over, but once in 32 runs).
func TestOwnershipSurvivesAFailover(t *testing.T) {
	t.Parallel()
	cluster := envtest.Start(t)
	admin := ctltest.Client(t, cluster.Config)
	ctx := context.Background()
	a, b := backend.Start(t, "a"), backend.Start(t, "b")
	namespaces(t, admin, "team-b", "team-c")
	rs := []*haReplica{startReplica(t, cluster.Config, "replica-0"), startReplica(t, cluster.Config, "replica-1")}
	lead := leader(t, rs)
	follower := rs[0]
	if follower == lead {
		follower = rs[1]
	}
	const nodes = 5
	config := func(namespace string, i, port int) *v1alpha1.EnvoyConfig {
		ec := payConfig(t, namespace, port)
		ec.Name, ec.Spec.NodeID = fmt.Sprintf("pay-%d", i), fmt.Sprintf("pay-edge-%d", i)
		return ec
	}
	for i := range nodes {
		mine := config("team-c", i, a.Port)
		require.NoError(t, admin.Create(ctx, mine))
		waitPublished(t, admin, mine, v1alpha1.CacheInSync) // stored
	}
	proxy := backend.Dial(t, follower.ctl.XDSAddr(), "pay-edge-0", "pod-1", "greeter")
	require.Eventually(t, func() bool { return proxy.Call() == "a" }, 60*time.Second, 50*time.Millisecond)

	for i := range nodes {
		require.NoError(t, admin.Create(ctx, config("team-b", i, b.Port)))
	}
	lead.stop()
	assert.Equal(t, follower, leader(t, []*haReplica{follower}))
	for i := range nodes {
		refusedAsForeign(t, admin, config("team-b", i, b.Port), "team-c")
		mine := get(t, admin, config("team-c", i, a.Port))
		assert.Equal(t, "team-c/"+mine.Name+"@1", mine.Status.Commit, "team-c's %s stays served", mine.Name)
	}
	for range 20 {
		require.Equal(t, "a", proxy.Call(), "team-c's open stream keeps team-c's configuration")
	}
}

// namespaces creates the namespaces names.
func namespaces(t *testing.T, c client.Client, names ...string) {
	t.Helper()
	for _, ns := range names {
		require.NoError(t, c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
}

// refusedAsForeign waits until ec says, in its Ready condition for its
// generation, that its node belongs to another namespace, and checks that
// it names nothing of owner, that namespace.
func refusedAsForeign(t *testing.T, c client.Client, ec *v1alpha1.EnvoyConfig, owner string) *v1alpha1.EnvoyConfig {
	t.Helper()
	var got *v1alpha1.EnvoyConfig
	var cond *metav1.Condition
	require.Eventually(t, func() bool {
		got = get(t, c, ec)
		cond = meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.ObservedGeneration == got.Generation &&
			strings.Contains(cond.Message, "belongs to another namespace")
	}, 60*time.Second, 100*time.Millisecond, "%s/%s is refused its node", ec.Namespace, ec.Name)
	assert.NotContains(t, cond.Message, owner, "nothing of the owner is told")
	return got
}
