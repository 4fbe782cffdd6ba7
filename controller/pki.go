package controller

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/pki/kubepki"
	"github.com/legate-dev/legate/tenancy"
	"github.com/legate-dev/legate/xds"
)

// What the controller needs of the API server for its PKI (config/rbac)
// and for the injected proxies (pki/kubepki.ProxyCertificates).
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create;update;patch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// startPKI starts legate's PKI (pki/kubepki) behind the controller's
// tenancy decision, mayServe. It returns the gRPC option of xDS over
// mutual TLS.
func (c *Controller) startPKI(direct client.Client) ([]grpc.ServerOption, error) {
	if err := c.indexNodes(); err != nil {
		return nil, err
	}
	p, err := kubepki.Start(*c.opts.PKI, kubepki.Home{
		Manager: c.mgr, Client: direct, Namespace: c.opts.Namespace, WatchNamespace: c.opts.WatchNamespace,
		Webhooks: c.opts.WebhookAddr != "" && c.opts.WebhookAddr != "0" && c.opts.WebhookCertDir == "",
		MayServe: c.mayServe, Watches: c.watches, Recorder: c.recorder, Log: c.log, SkipNameValidation: true,
	})
	if err != nil {
		return nil, err
	}
	c.issuer = &p.Issuer
	if p.Webhooks != nil {
		c.webhookTLS = p.Webhooks
	}
	return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(xds.ServerTLS(p.XDS)))}, nil
}

// mayServe refuses a certificate for nodeID in namespace unless the
// namespace owns the node, the controller's namespace owns it and shares it
// with namespace (tenancy.SharedAnnotation), or nobody owns it yet and the node ID
// policy lets the namespace take it. An object of another namespace that
// configures the node but was not rendered yet counts as its owner. The
// refusal names nothing of the other namespace.
func (c *Controller) mayServe(ctx context.Context, namespace, nodeID string) error {
	if owner := c.ownerOf(nodeID); owner != "" {
		return c.tenancy.MayReceive(namespace, nodeID, owner, c.sharedValue(ctx, owner))
	}
	reader := c.mgr.GetClient()
	var ecs v1alpha1.EnvoyConfigList
	if err := reader.List(ctx, &ecs, client.MatchingFields{nodeIndex: nodeID}); err != nil {
		return fmt.Errorf("list the EnvoyConfigs: %w", err)
	}
	for _, ec := range ecs.Items {
		if ec.Spec.NodeID == nodeID && ec.Namespace != namespace && !c.sharedWith(&ec, namespace) {
			return tenancy.ErrOtherNamespace(nodeID)
		}
	}
	var ess v1alpha1.EnvoySourceList
	if err := reader.List(ctx, &ess, client.MatchingFields{nodeIndex: nodeID}); err != nil {
		return fmt.Errorf("list the EnvoySources: %w", err)
	}
	for _, es := range ess.Items {
		if es.Namespace != namespace && slices.Contains(es.Status.Nodes, nodeID) && !c.sharedWith(&es, namespace) {
			return tenancy.ErrOtherNamespace(nodeID)
		}
	}
	return c.tenancy.MayTake(namespace, nodeID)
}

// sharedWith reports whether obj, of the controller's namespace, shares
// its nodes with namespace.
func (c *Controller) sharedWith(obj client.Object, namespace string) bool {
	return obj.GetNamespace() == c.opts.Namespace && tenancy.Shares(obj.GetAnnotations()[tenancy.SharedAnnotation], namespace)
}

// nodeIndex indexes EnvoyConfigs by spec.nodeID and EnvoySources by the
// nodes they render, so that mayServe reads only the objects of one node.
const nodeIndex = "legate.dev/node"

// indexNodes registers nodeIndex with the manager's cache.
func (c *Controller) indexNodes() error {
	ctx := context.Background()
	err := c.mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.EnvoyConfig{}, nodeIndex, func(obj client.Object) []string {
		return []string{obj.(*v1alpha1.EnvoyConfig).Spec.NodeID}
	})
	if err != nil {
		return fmt.Errorf("index EnvoyConfigs by node: %w", err)
	}
	err = c.mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.EnvoySource{}, nodeIndex, func(obj client.Object) []string {
		return obj.(*v1alpha1.EnvoySource).Status.Nodes
	})
	if err != nil {
		return fmt.Errorf("index EnvoySources by node: %w", err)
	}
	return nil
}
