// Package kubeendpoints builds the load assignments of
// generateFromEndpointSlices from Kubernetes EndpointSlices, for the
// Kubernetes home: an sds.EndpointResolver whose reads go through the
// controller's informer cache, whose events also say when to build them
// again (sds.Server.RefreshEndpoints).
//
// The package must not import a home.
package kubeendpoints

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/sds"
)

// listTimeout bounds one list of EndpointSlices.
const listTimeout = 10 * time.Second

// Resolver lists EndpointSlices from Cache (the manager's informer cache),
// or from Direct while the cache is not started yet (the publications a
// controller restores before its manager starts).
type Resolver struct {
	Cache  client.Reader
	Direct client.Reader
}

var _ sds.EndpointResolver = Resolver{}

// ResolveEndpoints implements sds.EndpointResolver.
func (r Resolver) ResolveEndpoints(ext render.ExternalEndpoints) (render.Resource, error) {
	sel, err := labels.Parse(ext.Selector)
	if err != nil {
		return render.Resource{}, fmt.Errorf("endpoints of cluster %q (%s): selector %q: %w", ext.ClusterName, ext.Source, ext.Selector, err)
	}
	if ext.Namespace == "" {
		return render.Resource{}, fmt.Errorf("endpoints of cluster %q (%s): no namespace to read EndpointSlices in", ext.ClusterName, ext.Source)
	}
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	var list discoveryv1.EndpointSliceList
	opts := []client.ListOption{client.InNamespace(ext.Namespace), client.MatchingLabelsSelector{Selector: sel}}
	err = r.Cache.List(ctx, &list, opts...)
	var notStarted *cache.ErrCacheNotStarted
	if errors.As(err, &notStarted) && r.Direct != nil {
		err = r.Direct.List(ctx, &list, opts...)
	}
	if err != nil {
		return render.Resource{}, fmt.Errorf("endpoints of cluster %q (%s): list the EndpointSlices of %s matching %q: %w", ext.ClusterName, ext.Source, ext.Namespace, ext.Selector, err)
	}
	body, err := render.Marshal(LoadAssignment(ext.ClusterName, ext.TargetPort, list.Items))
	if err != nil {
		return render.Resource{}, fmt.Errorf("endpoints of cluster %q (%s): %w", ext.ClusterName, ext.Source, err)
	}
	return render.Resource{Name: ext.ClusterName, Body: body, Source: ext.Source}, nil
}

// LoadAssignment is the ClusterLoadAssignment of cluster made from the
// endpoints of slices on targetPort: the port of that name, else of that
// number, else a slice's only port when targetPort is empty. Endpoints are
// grouped by zone, each locality weighted by its number of endpoints; a ready endpoint is HEALTHY, a terminating one
// DRAINING, any other UNHEALTHY (Envoy sends traffic to neither of the
// last two). An address listed twice (two slices during an update) keeps
// its healthiest entry. FQDN slices are skipped: Envoy takes only IP
// addresses from EDS. The result is deterministic.
func LoadAssignment(cluster, targetPort string, slices []discoveryv1.EndpointSlice) *endpointv3.ClusterLoadAssignment {
	type key struct {
		addr string
		port uint32
	}
	best := map[key]found{}
	for i := range slices {
		s := &slices[i]
		if s.AddressType == discoveryv1.AddressTypeFQDN {
			continue
		}
		port, proto, ok := pickPort(s.Ports, targetPort)
		if !ok {
			continue
		}
		for _, ep := range s.Endpoints {
			if len(ep.Addresses) == 0 {
				continue
			}
			// The addresses of one endpoint are fungible; the API says
			// to use the first.
			f := found{addr: ep.Addresses[0], port: port, proto: proto, health: health(ep.Conditions)}
			if ep.Zone != nil {
				f.zone = *ep.Zone
			}
			if ep.Hostname != nil {
				f.hostname = *ep.Hostname
			}
			k := key{f.addr, f.port}
			if prev, seen := best[k]; !seen || rank(f.health) < rank(prev.health) {
				best[k] = f
			}
		}
	}
	byZone := map[string][]found{}
	for _, f := range best {
		byZone[f.zone] = append(byZone[f.zone], f)
	}
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: cluster}
	for _, zone := range sortedKeys(byZone) {
		fs := byZone[zone]
		sortFound(fs)
		// Every locality is named (empty when the slices give no zone) and
		// weighs its number of endpoints: grpc-go ignores a locality
		// without weight, and Envoy reads the weights only where locality
		// weighted load balancing is configured.
		lle := &endpointv3.LocalityLbEndpoints{Locality: &corev3.Locality{Zone: zone}, LoadBalancingWeight: wrapperspb.UInt32(uint32(len(fs)))}
		for _, f := range fs {
			lle.LbEndpoints = append(lle.LbEndpoints, f.lbEndpoint())
		}
		cla.Endpoints = append(cla.Endpoints, lle)
	}
	return cla
}

// found is one endpoint address taken from a slice.
type found struct {
	addr, zone, hostname string
	port                 uint32
	proto                corev3.SocketAddress_Protocol
	health               corev3.HealthStatus
}

func (f found) lbEndpoint() *endpointv3.LbEndpoint {
	return &endpointv3.LbEndpoint{
		HealthStatus: f.health,
		HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
			Hostname: f.hostname,
			Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
				Protocol: f.proto, Address: f.addr, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: f.port},
			}}},
		}},
	}
}

func sortFound(fs []found) {
	slices.SortFunc(fs, func(a, b found) int { return cmp.Or(cmp.Compare(a.addr, b.addr), cmp.Compare(a.port, b.port)) })
}

func sortedKeys(m map[string][]found) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// pickPort finds targetPort among a slice's ports.
func pickPort(ports []discoveryv1.EndpointPort, targetPort string) (uint32, corev3.SocketAddress_Protocol, bool) {
	pick := func(p discoveryv1.EndpointPort) (uint32, corev3.SocketAddress_Protocol, bool) {
		if p.Port == nil || *p.Port <= 0 || *p.Port > 65535 {
			return 0, 0, false
		}
		proto := corev3.SocketAddress_TCP
		if p.Protocol != nil && *p.Protocol == corev1.ProtocolUDP {
			proto = corev3.SocketAddress_UDP
		}
		return uint32(*p.Port), proto, true
	}
	if targetPort == "" {
		if len(ports) == 1 {
			return pick(ports[0])
		}
		return 0, 0, false
	}
	for _, p := range ports {
		if p.Name != nil && *p.Name == targetPort {
			return pick(p)
		}
	}
	if n, err := strconv.Atoi(targetPort); err == nil {
		for _, p := range ports {
			if p.Port != nil && int(*p.Port) == n {
				return pick(p)
			}
		}
	}
	return 0, 0, false
}

// health is the Envoy health status of an endpoint's conditions; an
// unknown readiness counts as ready, as the API says.
func health(c discoveryv1.EndpointConditions) corev3.HealthStatus {
	switch {
	case c.Terminating != nil && *c.Terminating:
		return corev3.HealthStatus_DRAINING
	case c.Ready == nil || *c.Ready:
		return corev3.HealthStatus_HEALTHY
	default:
		return corev3.HealthStatus_UNHEALTHY
	}
}

// rank orders health statuses, healthiest first.
func rank(h corev3.HealthStatus) int {
	switch h {
	case corev3.HealthStatus_HEALTHY:
		return 0
	case corev3.HealthStatus_DRAINING:
		return 1
	default:
		return 2
	}
}
