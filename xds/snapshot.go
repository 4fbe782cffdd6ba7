package xds

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/legate-dev/legate/render"
)

// Snapshot is everything one node ID is served: the publication of the
// revision engine, in xds's own shape.
type Snapshot struct {
	// Version is unique per publication of a node. Events report it as
	// SnapshotVersion for the responses built from this snapshot.
	Version string `json:"version"`
	// Owner names who owns the node (revisions.Publication.Owner); the
	// Recheck option decides from it which streams may receive the
	// snapshot.
	Owner string `json:"owner,omitempty"`
	// Types maps an xDS type URL to its resources. A type that is absent is
	// served as an empty set to wildcard subscribers.
	Types map[string]TypeSnapshot `json:"types"`
	// Candidate, during a progressive rollout, is served instead of this
	// snapshot to the streams whose proxy bucket (rollout.ProxyBucket) is
	// below CandidateShare, in basis points; the others never see it. It
	// has a Version of its own, so answers tell which one they judge.
	Candidate      *Snapshot `json:"candidate,omitempty"`
	CandidateShare int       `json:"candidateShare,omitempty"`
}

// TypeSnapshot is the resource set of one type. A set whose Version is
// unchanged from the previous snapshot of the node must have unchanged
// content: it is not sent again to proxies that already have it.
type TypeSnapshot struct {
	Version   string            `json:"version"`
	Resources []render.Resource `json:"resources"`
}

const (
	hcmTypeURL = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
	// emptyVersion is the per-type version of a type a snapshot leaves out.
	emptyVersion = "empty"
)

// Consistent reports whether every route configuration a listener loads over
// RDS and every endpoint set an EDS cluster needs is part of the snapshot,
// and whether every type carries a version and unique resource names.
func (s Snapshot) Consistent() error {
	if s.Version == "" {
		return errors.New("snapshot has no version: set Snapshot.Version")
	}
	var errs []error
	for typeURL, ts := range s.Types {
		if ts.Version == "" {
			errs = append(errs, fmt.Errorf("type %s has no version: set TypeSnapshot.Version", typeURL))
		}
		seen := make(map[string]bool, len(ts.Resources))
		for _, r := range ts.Resources {
			if r.Name == "" {
				errs = append(errs, fmt.Errorf("type %s has a resource without a name", typeURL))
			}
			if seen[r.Name] {
				errs = append(errs, fmt.Errorf("type %s has resource %q twice", typeURL, r.Name))
			}
			seen[r.Name] = true
		}
	}
	routes, err := s.referencedRoutes()
	if err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, s.missing(resourcev3.RouteType, routes, "listener", "route configuration")...)
	endpoints, err := s.referencedEndpoints()
	if err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, s.missing(resourcev3.EndpointType, endpoints, "cluster", "endpoint assignment")...)
	return errors.Join(errs...)
}

// missing lists the referenced names (name -> referrer) absent from typeURL.
func (s Snapshot) missing(typeURL string, refs map[string]string, referrer, what string) []error {
	have := make(map[string]bool)
	for _, r := range s.Types[typeURL].Resources {
		have[r.Name] = true
	}
	names := make([]string, 0, len(refs))
	for name := range refs {
		if !have[name] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	errs := make([]error, 0, len(names))
	for _, name := range names {
		errs = append(errs, fmt.Errorf("%s %q refers to %s %q, which the snapshot does not contain: add it or fix the reference",
			referrer, refs[name], what, name))
	}
	return errs
}

// referencedRoutes maps every RDS route configuration name to the listener
// that refers to it.
func (s Snapshot) referencedRoutes() (map[string]string, error) {
	refs := make(map[string]string)
	for _, r := range s.Types[resourcev3.ListenerType].Resources {
		var l listenerv3.Listener
		if err := proto.Unmarshal(r.Body, &l); err != nil {
			return nil, fmt.Errorf("decode listener %q: %w", r.Name, err)
		}
		anys := []*anypb.Any{l.GetApiListener().GetApiListener()}
		chains := append([]*listenerv3.FilterChain{l.GetDefaultFilterChain()}, l.GetFilterChains()...)
		for _, fc := range chains {
			for _, f := range fc.GetFilters() {
				anys = append(anys, f.GetTypedConfig())
			}
		}
		for _, a := range anys {
			if a.GetTypeUrl() != hcmTypeURL {
				continue
			}
			var hcm hcmv3.HttpConnectionManager
			if err := proto.Unmarshal(a.GetValue(), &hcm); err != nil {
				return nil, fmt.Errorf("decode http connection manager of listener %q: %w", r.Name, err)
			}
			if name := hcm.GetRds().GetRouteConfigName(); name != "" {
				refs[name] = r.Name
			}
		}
	}
	return refs, nil
}

// referencedEndpoints maps every EDS service name to the cluster needing it.
func (s Snapshot) referencedEndpoints() (map[string]string, error) {
	refs := make(map[string]string)
	for _, r := range s.Types[resourcev3.ClusterType].Resources {
		var c clusterv3.Cluster
		if err := proto.Unmarshal(r.Body, &c); err != nil {
			return nil, fmt.Errorf("decode cluster %q: %w", r.Name, err)
		}
		if c.GetType() != clusterv3.Cluster_EDS {
			continue
		}
		name := c.GetEdsClusterConfig().GetServiceName()
		if name == "" {
			name = c.GetName()
		}
		refs[name] = r.Name
	}
	return refs, nil
}

// wildcardType reports whether an empty first request for typeURL means
// "everything" (LDS, CDS and SRDS in the xDS protocol).
func wildcardType(typeURL string) bool {
	switch typeURL {
	case resourcev3.ListenerType, resourcev3.ClusterType, resourcev3.ScopedRouteType:
		return true
	}
	return false
}

// pushOrder is the ADS order of updates: clusters before their endpoints,
// listeners before their routes, then everything else by type URL.
var pushOrder = []string{
	resourcev3.ClusterType,
	resourcev3.EndpointType,
	resourcev3.ListenerType,
	resourcev3.RouteType,
	resourcev3.ScopedRouteType,
	resourcev3.VirtualHostType,
}

func orderRank(typeURL string) int {
	for i, t := range pushOrder {
		if t == typeURL {
			return i
		}
	}
	return len(pushOrder)
}

// sortPushOrder sorts type URLs in ADS push order.
func sortPushOrder(types []string) {
	sort.Slice(types, func(i, j int) bool {
		ri, rj := orderRank(types[i]), orderRank(types[j])
		if ri != rj {
			return ri < rj
		}
		return types[i] < types[j]
	})
}

// shortType is the metric label of a type URL.
func shortType(typeURL string) string {
	return strings.TrimPrefix(typeURL, resourcev3.APITypePrefix)
}
