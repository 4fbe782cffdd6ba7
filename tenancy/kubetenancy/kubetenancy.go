// Package kubetenancy applies the tenancy rule (tenancy.Rule) to the
// objects of a cluster: it reads, from the manager's cache, who configures
// a node and what the platform's objects share, which the pure rule is
// told. The Kubernetes home gives its decisions to legate's PKI (who may
// get a certificate for a node) and to the xDS server (which streams may
// still receive a node).
//
// It must not import a home.
package kubetenancy

import (
	"context"
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/sources/kube"
	"github.com/legate-dev/legate/tenancy"
	"github.com/legate-dev/legate/xds"
)

// NodeIndex indexes EnvoyConfigs by spec.nodeID and EnvoySources by the
// nodes they render, so that MayServe reads only the objects of one node.
const NodeIndex = "legate.dev/node"

// IndexNodes registers NodeIndex with a manager's cache.
func IndexNodes(ctx context.Context, indexer client.FieldIndexer) error {
	err := indexer.IndexField(ctx, &v1alpha1.EnvoyConfig{}, NodeIndex, func(obj client.Object) []string {
		return []string{obj.(*v1alpha1.EnvoyConfig).Spec.NodeID}
	})
	if err != nil {
		return fmt.Errorf("index EnvoyConfigs by node: %w", err)
	}
	err = indexer.IndexField(ctx, &v1alpha1.EnvoySource{}, NodeIndex, func(obj client.Object) []string {
		return obj.(*v1alpha1.EnvoySource).Status.Nodes
	})
	if err != nil {
		return fmt.Errorf("index EnvoySources by node: %w", err)
	}
	return nil
}

// Checker decides with Rule over the objects of a cluster. Its methods
// are safe for concurrent use.
type Checker struct {
	tenancy.Rule
	// Cache reads EnvoyConfigs and EnvoySources, with NodeIndex.
	Cache client.Reader
	// Owner is the pipeline source that owns a node ("" for nobody).
	Owner func(node string) string
}

// MayServe refuses a certificate for nodeID in namespace unless the
// namespace owns the node, the controller's namespace owns it and shares
// it with namespace (tenancy.SharedAnnotation), or nobody owns it yet and
// the node ID policy lets the namespace take it. An object of another
// namespace that configures the node but was not rendered yet counts as
// its owner. The refusal names nothing of the other namespace.
func (c *Checker) MayServe(ctx context.Context, namespace, nodeID string) error {
	if owner := c.Owner(nodeID); owner != "" {
		return c.MayReceive(namespace, nodeID, owner, c.sharedValue(ctx, owner))
	}
	var ecs v1alpha1.EnvoyConfigList
	if err := c.Cache.List(ctx, &ecs, client.MatchingFields{NodeIndex: nodeID}); err != nil {
		return fmt.Errorf("list the EnvoyConfigs: %w", err)
	}
	for _, ec := range ecs.Items {
		if ec.Spec.NodeID == nodeID && ec.Namespace != namespace && !c.sharedWith(&ec, namespace) {
			return tenancy.ErrOtherNamespace(nodeID)
		}
	}
	var ess v1alpha1.EnvoySourceList
	if err := c.Cache.List(ctx, &ess, client.MatchingFields{NodeIndex: nodeID}); err != nil {
		return fmt.Errorf("list the EnvoySources: %w", err)
	}
	for _, es := range ess.Items {
		if es.Namespace != namespace && slices.Contains(es.Status.Nodes, nodeID) && !c.sharedWith(&es, namespace) {
			return tenancy.ErrOtherNamespace(nodeID)
		}
	}
	return c.MayTake(namespace, nodeID)
}

// Recheck is the xDS server's Recheck: before every push, a stream whose
// certificate legate issued to a namespace may still receive its node only
// while that namespace owns it (or the platform shares it). Streams whose
// certificate names no namespace (the operator's own, from
// --xds-client-ca) are bound by their certificate alone.
func (c *Checker) Recheck(ctx context.Context, node, owner string) error {
	ns := ProxyTenant(ctx)
	if ns == "" {
		return nil
	}
	return c.MayReceive(ns, node, owner, c.sharedValue(ctx, owner))
}

// ProxyTenant is the xDS server's tenant of a stream: the namespace its
// client certificate was issued in; "" without mutual TLS (the listener
// is on loopback) or for a certificate that names none (the operator's
// own, from --xds-client-ca).
func ProxyTenant(ctx context.Context) string {
	leaf, err := xds.ClientCertificate(ctx)
	if err != nil {
		return ""
	}
	return pki.NamespaceOf(leaf)
}

// sharedValue is the sharing annotation of the object owner stands for,
// as cached; "" when it is gone or outside the controller's namespace.
func (c *Checker) sharedValue(ctx context.Context, owner string) string {
	r, ok := sources.ParseRef(owner)
	if !ok || r.Namespace != c.Home {
		return ""
	}
	obj := kube.Object(r)
	if err := c.Cache.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return ""
	}
	return obj.GetAnnotations()[tenancy.SharedAnnotation]
}

// sharedWith reports whether obj, of the controller's namespace, shares
// its nodes with namespace.
func (c *Checker) sharedWith(obj client.Object, namespace string) bool {
	return obj.GetNamespace() == c.Home && tenancy.Shares(obj.GetAnnotations()[tenancy.SharedAnnotation], namespace)
}
