package kubepki

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/webhook"
	"github.com/legate-dev/legate/xds"
)

// Events on a Pod whose proxy's certificate is refused or issued.
const (
	EventProxyCertificateRefused = "ProxyCertificateRefused"
	EventProxyCertificateFailed  = "ProxyCertificateFailed"
)

// MayServe is the home's tenancy decision: whether namespace may hold
// nodeID's certificate (and be served the node). A refusal must name
// nothing of another namespace: it reaches Pod events and admission
// answers. It is called concurrently.
type MayServe func(ctx context.Context, namespace, nodeID string) error

// Issuer checks that a namespace may hold a node ID's certificate before
// its Authority issues it (webhook.ProxyIssuer): the admission webhook (a
// dry run) and the Pod reconciler go through it.
type Issuer struct {
	Authority *Authority
	MayServe  MayServe
}

// EnsureProxy checks that namespace may hold nodeID's certificate, then
// has the authority issue or renew it. A dry run (admission) decides from
// the home's own state only: it reads no Secret, so that a review, which
// the webhook cannot authenticate, learns nothing of another namespace's
// Secrets.
func (i Issuer) EnsureProxy(ctx context.Context, namespace, secretName, nodeID string, dryRun bool) error {
	if err := i.MayServe(ctx, namespace, nodeID); err != nil {
		return err
	}
	if dryRun {
		return nil
	}
	return i.Authority.EnsureProxy(ctx, namespace, secretName, nodeID, false)
}

// ProxyCertificates is the reconciler that issues (and keeps) the client
// certificate of every injected proxy (Pods labelled webhook.ProxyLabel)
// once the API server has stored its Pod. It reports what it refuses or
// fails to issue as an event on the Pod. Its state is the Issuer's.
type ProxyCertificates struct {
	Issuer
	// Pods reads the injected Pods (the manager's cache, holding their
	// metadata only: PodMetadata) and the Secrets' metadata.
	Pods client.Reader
	// Watches reports whether the home serves a namespace's objects.
	Watches  func(namespace string) bool
	Recorder events.EventRecorder
}

// SetupWithManager registers the reconciler with mgr: it reconciles a Pod
// when it is stored and when what names its proxy changes
// (proxyPodChanged), and the Pods of a proxy Secret that was deleted
// (podsOfSecret), so that their certificate is issued again.
func (p *ProxyCertificates) SetupWithManager(mgr manager.Manager, skipNameValidation bool) error {
	return ctrl.NewControllerManagedBy(mgr).Named("proxy-certificates").
		For(&corev1.Pod{}, builder.WithPredicates(proxyPodChanged)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(p.podsOfSecret),
			builder.OnlyMetadata, builder.WithPredicates(proxySecretDeleted)).
		WithOptions(crcontroller.Options{SkipNameValidation: &skipNameValidation}).
		Complete(p)
}

// proxyPodChanged passes a Pod's creation, and an update only when its
// labels or annotations (which name its proxy and Secret) changed: a
// Pod's status changes several times as it starts and whenever its
// readiness flips, and each reconcile reads the proxy's Secret from the
// API server. A deleted Pod leaves its Secret to the node's other Pods.
var proxyPodChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
			!maps.Equal(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations())
	},
	DeleteFunc: func(event.DeleteEvent) bool { return false },
}

// proxySecretDeleted passes the deletion of a proxy Secret legate issued.
var proxySecretDeleted = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	DeleteFunc: func(e event.DeleteEvent) bool {
		return e.Object.GetLabels()[LabelCertificate] == KindProxy
	},
}

// podsOfSecret is the injected Pods of the Secret's namespace whose proxy
// holds its certificate in it.
func (p *ProxyCertificates) podsOfSecret(ctx context.Context, secret client.Object) []reconcile.Request {
	var pods corev1.PodList
	if err := p.Pods.List(ctx, &pods, client.InNamespace(secret.GetNamespace())); err != nil {
		return nil // the cache is stopping
	}
	var out []reconcile.Request
	for i := range pods.Items {
		pod := &pods.Items[i]
		if s, err := webhook.Parse(pod.Annotations); err == nil && s.SecretName() == secret.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pod)})
		}
	}
	return out
}

// Reconcile issues or renews the certificate of one injected Pod's proxy.
func (p *ProxyCertificates) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if p.Watches != nil && !p.Watches(req.Namespace) {
		return reconcile.Result{}, nil
	}
	var pod corev1.Pod
	if err := p.Pods.Get(ctx, req.NamespacedName, &pod); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil // the Secret stays for the node's other pods
		}
		return reconcile.Result{}, err
	}
	if pod.DeletionTimestamp != nil || pod.Labels[webhook.ProxyLabel] == "" {
		return reconcile.Result{}, nil
	}
	s, err := webhook.Parse(pod.Annotations)
	if err != nil {
		p.Recorder.Eventf(&pod, nil, corev1.EventTypeWarning, EventProxyCertificateRefused, "IssueCertificate", "%v", err)
		return reconcile.Result{}, nil
	}
	if err := p.MayServe(ctx, pod.Namespace, s.NodeID); err != nil {
		p.Recorder.Eventf(&pod, nil, corev1.EventTypeWarning, EventProxyCertificateRefused, "IssueCertificate", "%v", err)
		return reconcile.Result{}, nil
	}
	switch p.cached(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: s.SecretName()}, s.NodeID) {
	case secretCurrent:
		return reconcile.Result{}, nil
	case secretMissing:
		err = p.Authority.CreateProxy(ctx, pod.Namespace, s.SecretName(), s.NodeID)
	default:
		err = p.Authority.EnsureProxy(ctx, pod.Namespace, s.SecretName(), s.NodeID, false)
	}
	if err != nil {
		p.Recorder.Eventf(&pod, nil, corev1.EventTypeWarning, EventProxyCertificateFailed, "IssueCertificate", "%v", err)
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nil
}

// secretState is what the cache's metadata says of a proxy's Secret
// (cached).
type secretState int

const (
	secretMissing secretState = iota // no such Secret
	secretCurrent                    // legate's certificate of the node, not yet due
	secretToCheck                    // anything else: read and decide
)

// cached says what the cache's metadata of Secret key tells of nodeID's
// certificate. A Secret stamped as legate's certificate of the node and
// not yet due (stampedCurrent) needs nothing, and no Secret is read from
// the API server (a Pod of a node that has its certificate, and every Pod
// again when a new leader starts); its data is checked by the renewal
// passes (Run). A Secret the cache does not hold is created at once
// (CreateProxy), without a read that would find nothing: a new node costs
// one request. Anything else goes to EnsureProxy, which reads the Secret
// and checks its data.
func (p *ProxyCertificates) cached(ctx context.Context, key types.NamespacedName, nodeID string) secretState {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	switch err := p.Pods.Get(ctx, key, meta); {
	case apierrors.IsNotFound(err):
		return secretMissing
	case err == nil && stampedCurrent(meta, nodeID, p.Authority.now()):
		return secretCurrent
	default:
		return secretToCheck
	}
}

// PodMetadata is a cache transform that keeps of a Pod its metadata (the
// annotations name its proxy): the cache of injected pods grows with the
// fleet.
func PodMetadata(obj any) (any, error) {
	if pod, ok := obj.(*corev1.Pod); ok {
		pod.ManagedFields = nil
		pod.Spec, pod.Status = corev1.PodSpec{}, corev1.PodStatus{}
	}
	return obj, nil
}

// NamespacedBinding is xds.CertificateBinding, and for a certificate
// legate issued to a proxy of a namespace (pki.NamespaceOf) may's rule
// too: a certificate a namespace got for a node ID nobody configured then
// is refused once another namespace configures that node.
func NamespacedBinding(may MayServe) func(ctx context.Context, node string) (string, error) {
	return func(ctx context.Context, node string) (string, error) {
		identity, err := xds.CertificateBinding(ctx, node)
		if err != nil {
			return "", err
		}
		leaf, err := xds.ClientCertificate(ctx) // verified by CertificateBinding
		if err != nil {
			return "", err
		}
		if ns := pki.NamespaceOf(leaf); ns != "" {
			if err := may(ctx, ns, node); err != nil {
				return "", err
			}
		}
		return identity, nil
	}
}
