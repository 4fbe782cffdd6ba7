package controller

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/pki/kubepki"
	"github.com/legate-dev/legate/webhook"
	"github.com/legate-dev/legate/xds"
)

// What the controller needs of the API server for the injected proxies.
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// Events on a Pod whose proxy's certificate is refused or issued.
const (
	EventProxyCertificateRefused = "ProxyCertificateRefused"
	EventProxyCertificateFailed  = "ProxyCertificateFailed"
)

// proxyIssuer checks that a namespace may hold a node ID's certificate
// before its authority issues it: the admission webhook (a dry run) and
// the Pod reconciler go through it.
type proxyIssuer struct {
	c         *Controller
	authority *kubepki.Authority
}

// EnsureProxy checks that namespace may hold nodeID's certificate, then
// has the authority issue or renew it. A dry run (admission) decides from
// the controller's own state only: it
// reads no Secret, so that a review, which the webhook cannot
// authenticate, learns nothing of another namespace's Secrets. The Pod
// reconciler reports a Secret it cannot use as an event on the Pod.
func (p proxyIssuer) EnsureProxy(ctx context.Context, namespace, secretName, nodeID string, dryRun bool) error {
	if err := p.c.mayServe(ctx, namespace, nodeID); err != nil {
		return err
	}
	if dryRun {
		return nil
	}
	return p.authority.EnsureProxy(ctx, namespace, secretName, nodeID, false)
}

// mayServe refuses a certificate for nodeID in namespace unless the
// namespace owns the node, the controller's namespace owns it and shares it
// with namespace (SharedAnnotation), or nobody owns it yet and the node ID
// policy lets the namespace take it. An object of another namespace that
// configures the node but was not rendered yet counts as its owner. The
// refusal names nothing of the other namespace.
func (c *Controller) mayServe(ctx context.Context, namespace, nodeID string) error {
	if owner := c.ownerOf(nodeID); owner != "" {
		return c.tenancy.mayReceive(namespace, nodeID, owner, c.sharedValue(ctx, owner))
	}
	reader := c.mgr.GetClient()
	var ecs v1alpha1.EnvoyConfigList
	if err := reader.List(ctx, &ecs, client.MatchingFields{nodeIndex: nodeID}); err != nil {
		return fmt.Errorf("list the EnvoyConfigs: %w", err)
	}
	for _, ec := range ecs.Items {
		if ec.Spec.NodeID == nodeID && ec.Namespace != namespace && !c.sharedWith(&ec, namespace) {
			return errOtherNamespace(nodeID)
		}
	}
	var ess v1alpha1.EnvoySourceList
	if err := reader.List(ctx, &ess, client.MatchingFields{nodeIndex: nodeID}); err != nil {
		return fmt.Errorf("list the EnvoySources: %w", err)
	}
	for _, es := range ess.Items {
		if es.Namespace != namespace && slices.Contains(es.Status.Nodes, nodeID) && !c.sharedWith(&es, namespace) {
			return errOtherNamespace(nodeID)
		}
	}
	return c.tenancy.mayTake(namespace, nodeID)
}

// sharedWith reports whether obj, of the controller's namespace, shares
// its nodes with namespace.
func (c *Controller) sharedWith(obj client.Object, namespace string) bool {
	return obj.GetNamespace() == c.opts.Namespace && shares(obj.GetAnnotations()[SharedAnnotation], namespace)
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

// watchInjectedPods registers the reconciler that issues (and keeps) the
// client certificate of every injected proxy (Pods labelled
// webhook.ProxyLabel, the only ones the cache holds) once the API server
// has stored its Pod.
func (c *Controller) watchInjectedPods(skipNameValidation bool) error {
	err := ctrl.NewControllerManagedBy(c.mgr).Named("proxy-certificates").
		For(&corev1.Pod{}).
		WithOptions(crcontroller.Options{SkipNameValidation: &skipNameValidation}).
		Complete(reconcile.Func(c.reconcileInjectedPod))
	if err != nil {
		return fmt.Errorf("proxy certificate reconciler: %w", err)
	}
	return nil
}

func (c *Controller) reconcileInjectedPod(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if !c.watches(req.Namespace) {
		return ctrl.Result{}, nil
	}
	var pod corev1.Pod
	if err := c.mgr.GetClient().Get(ctx, req.NamespacedName, &pod); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil // the Secret stays for the node's other pods
		}
		return ctrl.Result{}, err
	}
	if pod.DeletionTimestamp != nil || pod.Labels[webhook.ProxyLabel] == "" {
		return ctrl.Result{}, nil
	}
	s, err := webhook.Parse(pod.Annotations)
	if err != nil {
		c.recorder.Eventf(&pod, nil, corev1.EventTypeWarning, EventProxyCertificateRefused, "IssueCertificate", "%v", err)
		return ctrl.Result{}, nil
	}
	if err := c.mayServe(ctx, pod.Namespace, s.NodeID); err != nil {
		c.recorder.Eventf(&pod, nil, corev1.EventTypeWarning, EventProxyCertificateRefused, "IssueCertificate", "%v", err)
		return ctrl.Result{}, nil
	}
	if err := c.issuer.authority.EnsureProxy(ctx, pod.Namespace, s.SecretName(), s.NodeID, false); err != nil {
		c.recorder.Eventf(&pod, nil, corev1.EventTypeWarning, EventProxyCertificateFailed, "IssueCertificate", "%v", err)
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// podMetadata keeps of a cached Pod its metadata (the annotations name
// its proxy): the cache of injected pods grows with the fleet.
func podMetadata(obj any) (any, error) {
	if pod, ok := obj.(*corev1.Pod); ok {
		pod.ManagedFields = nil
		pod.Spec, pod.Status = corev1.PodSpec{}, corev1.PodStatus{}
	}
	return obj, nil
}

// namespacedBinding is xds.CertificateBinding, and for a certificate legate
// issued to a proxy of a namespace (pki.NamespaceOf) the namespace rule of
// mayServe too: a certificate a namespace got for a node ID nobody
// configured then is refused once another namespace configures that node.
func (c *Controller) namespacedBinding(ctx context.Context, node string) (string, error) {
	identity, err := xds.CertificateBinding(ctx, node)
	if err != nil {
		return "", err
	}
	leaf, err := xds.ClientCertificate(ctx) // verified by CertificateBinding
	if err != nil {
		return "", err
	}
	if ns := pki.NamespaceOf(leaf); ns != "" {
		if err := c.mayServe(ctx, ns, node); err != nil {
			return "", err
		}
	}
	return identity, nil
}
