package cue

import (
	"path"

	"cuelang.org/go/cue"
)

// PolicyDir is where policies live in a configuration tree.
const PolicyDir = "policy"

// RulePolicy names diagnostics of broken or invalid policies.
const RulePolicy = "policy"

// policyKeys maps the top-level fields a policy file may declare to the xDS
// type URL of the resources they constrain.
var policyKeys = map[string]string{
	"listener":                   "type.googleapis.com/envoy.config.listener.v3.Listener",
	"route_configuration":        "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
	"scoped_route_configuration": "type.googleapis.com/envoy.config.route.v3.ScopedRouteConfiguration",
	"virtual_host":               "type.googleapis.com/envoy.config.route.v3.VirtualHost",
	"cluster":                    "type.googleapis.com/envoy.config.cluster.v3.Cluster",
	"cluster_load_assignment":    "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
	"secret":                     "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret",
	"runtime":                    "type.googleapis.com/envoy.service.runtime.v3.Runtime",
	"typed_extension_config":     "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig",
}

// policy is one compiled policy file.
type policy struct {
	file  string
	lines []string
	// nodes selects the node IDs the policy applies to (path.Match
	// patterns); empty means every node.
	nodes []string
	// rules maps a type URL to the constraint on its resources.
	rules map[string]*rule
}

// rule is the constraint of one policy on one resource type.
type rule struct {
	key   string
	value cue.Value
	// keep says which parts of a resource the constraint can see; nil
	// means the whole resource.
	keep *mask
	// verdicts caches the violations per distinct folded value (JSON).
	verdicts map[string][]*violation
}

func (p *policy) appliesTo(nodes []string) []string {
	if len(p.nodes) == 0 {
		return nodes
	}
	var out []string
	for _, n := range nodes {
		for _, pat := range p.nodes {
			if ok, _ := path.Match(pat, n); ok {
				out = append(out, n)
				break
			}
		}
	}
	return out
}
