package kubeendpoints

import (
	"fmt"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func slice(name string, typ discoveryv1.AddressType, ports []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) discoveryv1.EndpointSlice {
	return discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, AddressType: typ, Ports: ports, Endpoints: eps}
}

func port(name string, n int32) discoveryv1.EndpointPort {
	return discoveryv1.EndpointPort{Name: ptr.To(name), Port: ptr.To(n), Protocol: ptr.To(corev1.ProtocolTCP)}
}

func ep(addr, zone string, ready, terminating *bool) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ready, Terminating: terminating}}
	if zone != "" {
		e.Zone = ptr.To(zone)
	}
	return e
}

// summary is "zone addr:port STATUS" per endpoint, in order.
func summary(cla *endpointv3.ClusterLoadAssignment) []string {
	var out []string
	for _, l := range cla.Endpoints {
		for _, e := range l.LbEndpoints {
			sa := e.GetEndpoint().GetAddress().GetSocketAddress()
			out = append(out, fmt.Sprintf("%s %s:%d %s", l.GetLocality().GetZone(), sa.Address, sa.GetPortValue(), e.HealthStatus))
		}
	}
	return out
}

// The load assignment takes the named port of every IP slice, groups by
// zone, maps the endpoint conditions to Envoy health, keeps the healthiest
// of a duplicated address, and does not depend on the order of slices.
func TestLoadAssignment(t *testing.T) {
	yes, no := ptr.To(true), ptr.To(false)
	ports := []discoveryv1.EndpointPort{port("metrics", 9090), port("http", 8080)}
	in := []discoveryv1.EndpointSlice{
		slice("api-b", discoveryv1.AddressTypeIPv4, ports,
			ep("10.0.0.3", "zone-b", yes, nil),
			ep("10.0.0.1", "zone-a", no, yes), // the same pod, seen terminating in another slice
		),
		slice("api-a", discoveryv1.AddressTypeIPv4, ports,
			ep("10.0.0.2", "zone-a", nil, nil), // readiness unknown: ready
			ep("10.0.0.1", "zone-a", yes, nil),
			ep("10.0.0.4", "zone-a", no, nil),
			ep("10.0.0.5", "zone-a", no, yes),
		),
		slice("api-v6", discoveryv1.AddressTypeIPv6, ports, ep("fd00::1", "", yes, nil)),
		slice("api-fqdn", discoveryv1.AddressTypeFQDN, ports, ep("api.example.com", "", yes, nil)),
		slice("other-port", discoveryv1.AddressTypeIPv4, []discoveryv1.EndpointPort{port("grpc", 9000)}, ep("10.0.0.9", "", yes, nil)),
	}
	cla := LoadAssignment("api", "http", in)
	assert.Equal(t, "api", cla.ClusterName)
	want := []string{
		" fd00::1:8080 HEALTHY",
		"zone-a 10.0.0.1:8080 HEALTHY",
		"zone-a 10.0.0.2:8080 HEALTHY",
		"zone-a 10.0.0.4:8080 UNHEALTHY",
		"zone-a 10.0.0.5:8080 DRAINING",
		"zone-b 10.0.0.3:8080 HEALTHY",
	}
	assert.Equal(t, want, summary(cla))
	var weights []uint32
	for _, l := range cla.Endpoints {
		weights = append(weights, l.GetLoadBalancingWeight().GetValue())
	}
	assert.Equal(t, []uint32{1, 4, 1}, weights, "a locality weighs its endpoints (grpc-go ignores a locality without weight)")
	require.NoError(t, cla.ValidateAll(), "Envoy's own rules")

	in[0], in[1] = in[1], in[0]
	assert.Equal(t, want, summary(LoadAssignment("api", "http", in)), "order of slices does not matter")

	byNumber := summary(LoadAssignment("api", "9000", in))
	assert.Equal(t, []string{" 10.0.0.9:9000 HEALTHY"}, byNumber, "a number picks the port of that number")
	assert.Equal(t, []string{" 10.0.0.9:9000 HEALTHY"}, summary(LoadAssignment("api", "", in)), "no targetPort: a slice's only port")
	assert.Empty(t, LoadAssignment("api", "nope", in).Endpoints, "no such port: no endpoints")
	assert.Empty(t, LoadAssignment("api", "http", nil).Endpoints, "no slices: an empty assignment, valid for Envoy")

	udp := port("dns", 53)
	udp.Protocol = ptr.To(corev1.ProtocolUDP)
	got := LoadAssignment("dns", "dns", []discoveryv1.EndpointSlice{slice("dns", discoveryv1.AddressTypeIPv4, []discoveryv1.EndpointPort{udp}, ep("10.0.0.10", "", yes, nil))})
	assert.Equal(t, corev3.SocketAddress_UDP, got.Endpoints[0].LbEndpoints[0].GetEndpoint().GetAddress().GetSocketAddress().Protocol)
}
