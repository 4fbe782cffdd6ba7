package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/test/internal/backend"
	"github.com/legate-dev/legate/test/internal/xdsyaml"
)

// endpointSlice is the EndpointSlice of Service "api" in namespace with
// one ready endpoint, backend.PodIP:port, on the port named grpc.
func endpointSlice(namespace string, port int) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: "api-1", Namespace: namespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: "api"},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("grpc"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{backend.PodIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}
}

// revisionsOf counts the EnvoyConfigRevisions of node.
func revisionsOf(t *testing.T, c client.Client, node string) int {
	t.Helper()
	var list v1alpha1.EnvoyConfigRevisionList
	require.NoError(t, c.List(context.Background(), &list, client.InNamespace("legate-system")))
	n := 0
	for _, r := range list.Items {
		if r.Spec.NodeID == node {
			n++
		}
	}
	return n
}

// generateFromEndpointSlices: a real grpc-go client calls the backend the
// EndpointSlices of the EnvoyConfig's namespace name. When the slice
// changes, the new endpoints reach the client as a new version of the
// load assignments only: no new revision, the same published version. An
// endpoint that is no longer ready gets no traffic, and a Service of the
// same name in another namespace is never used.
func TestEndpointSlicesReachTheProxy(t *testing.T) {
	t.Parallel()
	c, ctl := run(t)
	ctx := context.Background()
	a, b, decoy := backend.Start(t, "a"), backend.Start(t, "b"), backend.Start(t, "decoy")
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}}))
	require.NoError(t, c.Create(ctx, endpointSlice("other", decoy.Port)))
	slice := endpointSlice("default", a.Port)
	require.NoError(t, c.Create(ctx, slice))

	ec := envoyConfig(t, "eds-client",
		xdsyaml.APIListener("greeter", "greeter", "routes"),
		xdsyaml.RouteConfiguration("routes", "greeter", xdsyaml.Route{Cluster: "api"}),
		xdsyaml.EDSCluster("api"),
	)
	ec.Spec.Resources = append(ec.Spec.Resources, v1alpha1.Resource{Type: "endpoint", GenerateFromEndpointSlices: &v1alpha1.GenerateFromEndpointSlices{
		Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{discoveryv1.LabelServiceName: "api"}},
		ClusterName: "api", TargetPort: "grpc",
	}})
	require.NoError(t, c.Create(ctx, ec))
	grpcClient := backend.Dial(t, ctl.XDSAddr(), "eds-client", "pod-1", "greeter", backend.ToLoopback())
	require.Eventually(t, func() bool { return grpcClient.Call() == "a" }, 60*time.Second, 50*time.Millisecond, "RPCs land on the slice's endpoint")
	require.Eventually(t, func() bool {
		got := get(t, c, ec)
		return got.Status.CacheState != nil && *got.Status.CacheState == v1alpha1.CacheInSync && got.Status.Proxies != nil && got.Status.Proxies.Accepted == 1
	}, 60*time.Second, 50*time.Millisecond, "the proxy accepted the revision")
	published := *get(t, c, ec).Status.PublishedVersion
	revisions := revisionsOf(t, c, "eds-client")
	require.Equal(t, 1, revisions)

	// The Service's pod moves: the slice now names b's port.
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(slice), slice))
	slice.Ports[0].Port = ptr.To(int32(b.Port))
	require.NoError(t, c.Update(ctx, slice))
	require.Eventually(t, func() bool { return grpcClient.Call() == "b" }, 60*time.Second, 50*time.Millisecond, "the new endpoint is pushed")
	got := get(t, c, ec)
	assert.Equal(t, published, *got.Status.PublishedVersion, "an endpoint change is no new publication")
	assert.Equal(t, v1alpha1.CacheInSync, *got.Status.CacheState)
	assert.Equal(t, revisions, revisionsOf(t, c, "eds-client"), "an endpoint change is no new revision")

	// The endpoint stops being ready: Envoy and grpc-go send it nothing.
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(slice), slice))
	slice.Endpoints[0].Conditions.Ready = ptr.To(false)
	require.NoError(t, c.Update(ctx, slice))
	require.Eventually(t, func() bool { return grpcClient.Call() == "" }, 60*time.Second, 50*time.Millisecond, "an endpoint not ready gets no RPC")

	// Ready again, then the slice goes away: no endpoints, no RPCs.
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(slice), slice))
	slice.Endpoints[0].Conditions.Ready = ptr.To(true)
	require.NoError(t, c.Update(ctx, slice))
	require.Eventually(t, func() bool { return grpcClient.Call() == "b" }, 60*time.Second, 50*time.Millisecond)
	require.NoError(t, c.Delete(ctx, slice))
	require.Eventually(t, func() bool { return grpcClient.Call() == "" }, 60*time.Second, 50*time.Millisecond, "no slice, no endpoints")
	assert.Equal(t, published, *get(t, c, ec).Status.PublishedVersion)
	assert.Equal(t, revisions, revisionsOf(t, c, "eds-client"))
}
