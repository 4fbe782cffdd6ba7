// Package tenancy is the multi-tenant rule of the Kubernetes home: which
// namespace's proxies may receive a node, and which namespace may take or
// configure a node ID. It is pure: the caller says who owns a node (a
// pipeline source name, sources.Ref) and what the owner's sharing
// annotation holds; the package reads nothing itself.
package tenancy

import (
	"fmt"
	"strings"

	"github.com/legate-dev/legate/sources"
)

// SharedAnnotation is the annotation by which an EnvoyConfig or
// EnvoySource of the controller's own namespace lists the namespaces whose
// proxies may receive the nodes it configures (comma-separated; "*": every
// namespace). Without it, the platform's nodes are served to proxies of
// the controller's namespace and to proxies whose certificates name no
// namespace only.
const SharedAnnotation = "legate.dev/serve-namespaces"

// NodeIDPolicy decides which node IDs nobody owns yet a namespace may take
// (configure, or get a proxy certificate for).
type NodeIDPolicy string

const (
	// NodeIDsFirstCome: any node ID nobody owns; the first namespace
	// whose object configures it owns it, and a certificate another
	// namespace took before stops being served at the next push.
	NodeIDsFirstCome NodeIDPolicy = "first-come"
	// NodeIDsNamespacePrefix: a namespace takes only node IDs that begin
	// with its name and a dot ("team-a.edge"); the controller's namespace
	// takes any. Nobody can squat another team's future node ID.
	NodeIDsNamespacePrefix NodeIDPolicy = "namespace-prefix"
)

// ParseNodeIDPolicy checks a --node-id-policy value ("" is first-come).
func ParseNodeIDPolicy(s string) (NodeIDPolicy, error) {
	switch p := NodeIDPolicy(s); p {
	case "":
		return NodeIDsFirstCome, nil
	case NodeIDsFirstCome, NodeIDsNamespacePrefix:
		return p, nil
	}
	return "", fmt.Errorf("node ID policy %q: want %q or %q", s, NodeIDsFirstCome, NodeIDsNamespacePrefix)
}

// TenantOf is the tenant of a pipeline source: its namespace.
func TenantOf(source string) string {
	r, _ := sources.ParseRef(source)
	return r.Namespace
}

// ErrOtherNamespace is what a tenant is told of a node another namespace
// owns: that it is taken, and nothing about by whom.
func ErrOtherNamespace(node string) error {
	return fmt.Errorf("node ID %q belongs to another namespace: use a node ID of your own namespace", node)
}

// Shares reports whether the sharing annotation's value lets namespace
// receive the node.
func Shares(value, namespace string) bool {
	for _, v := range strings.Split(value, ",") {
		if v = strings.TrimSpace(v); v == "*" || v == namespace {
			return true
		}
	}
	return false
}

// Rule is the rule of one controller: its own namespace, the platform's,
// and its node ID policy.
type Rule struct {
	// Home is the controller's namespace, the platform's.
	Home   string
	Policy NodeIDPolicy
}

// MayReceive decides whether a proxy of namespace may be served a node
// owned by owner ("" for nobody), whose owning object carries the sharing
// annotation value shared.
func (t Rule) MayReceive(namespace, node, owner, shared string) error {
	if owner == "" {
		return nil
	}
	r, ok := sources.ParseRef(owner)
	switch {
	case !ok:
		return fmt.Errorf("node ID %q has an owner this controller does not know", node)
	case r.Namespace == namespace:
		return nil
	case r.Namespace == t.Home && Shares(shared, namespace):
		return nil
	}
	return ErrOtherNamespace(node)
}

// MayTake decides whether namespace may take a node ID nobody owns.
func (t Rule) MayTake(namespace, node string) error {
	if t.Policy != NodeIDsNamespacePrefix || namespace == t.Home || strings.HasPrefix(node, namespace+".") {
		return nil
	}
	return fmt.Errorf("node ID %q does not begin with %q: this cluster's policy (%s) gives each namespace the node IDs that begin with its name", node, namespace+".", NodeIDsNamespacePrefix)
}

// MayConfigure decides whether an object of source's namespace may
// configure node, owned by owner ("" for nobody): another namespace's node
// is refused, naming nothing of it.
func (t Rule) MayConfigure(source, node, owner string) error {
	ns := TenantOf(source)
	if owner == "" {
		return t.MayTake(ns, node)
	}
	if TenantOf(owner) != ns {
		return ErrOtherNamespace(node)
	}
	return nil
}
