package controller

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/core"
	"github.com/legate-dev/legate/envoydeployment"
	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/pipeline/readiness"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/rollout/kuberollout"
	"github.com/legate-dev/legate/sources"
	kubesrc "github.com/legate-dev/legate/sources/kube"
	"github.com/legate-dev/legate/webhook"
)

// shared is what the reconcilers of legate's kinds are given, the same for
// each: the stages they drive and the one status writer. Each reconciler
// keeps its own state beside it.
type shared struct {
	client   client.Client // direct: reads what it writes
	cache    client.Reader // the manager's cache
	core     *core.Core    // the engine and pipeline the reconcilers drive
	status   *statusWriter
	recorder events.EventRecorder
	log      logr.Logger
	// home is the controller's namespace (its revisions, its policies);
	// watched the one namespace whose objects are reconciled ("" for all).
	home, watched string
	// rollouts holds each source's spec.rollout, set before its content
	// reaches the pipeline.
	rollouts *kuberollout.Plans
}

// watches reports whether objects of namespace are reconciled (the cache
// also holds the controller's own namespace, for its revisions).
func (s *shared) watches(namespace string) bool { return watching(s.watched, namespace) }

// watching reports whether a controller that watches the namespace
// watched ("" for every namespace) reconciles the objects of namespace.
func watching(watched, namespace string) bool {
	return watched == "" || namespace == watched
}

// waitForLead is the result of a reconcile that decides on a replica that
// does not lead yet: the leader's reconcilers start when it is elected,
// and the engine leads once it has read the store (Lead).
func (s *shared) waitForLead() (ctrl.Result, bool) {
	if s.core.Engine().Leading() {
		return ctrl.Result{}, false
	}
	return ctrl.Result{RequeueAfter: 200 * time.Millisecond}, true
}

// announce records a Kubernetes event when the object's readiness changed
// its verdict: published, rejected by validation, rolled back.
func (s *shared) announce(obj runtime.Object, was, now *metav1.Condition) {
	if kind, reason, note, ok := readiness.EventOf(was, now); ok {
		s.recorder.Eventf(obj, nil, kind, reason, "Reconcile", "%s", note)
	}
}

// warn records a Warning event on obj.
func (s *shared) warn(obj runtime.Object, reason, action, note string) {
	s.recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, action, "%s", note)
}

// requeueAfter re-reads a status that is still settling.
const requeueAfter = 5 * time.Second

// What the EnvoyDeployment reconciler makes (envoydeployment.Reconciler).
// +kubebuilder:rbac:groups=legate.dev,resources=envoydeployments,verbs=get;list;watch
// +kubebuilder:rbac:groups=legate.dev,resources=envoydeployments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments;daemonsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;serviceaccounts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;update;patch;delete

// setupReconcilers builds the reconciler of each of legate's kinds
// (EnvoyConfig, EnvoySource, EnvoyDeployment, revision untaint, policy
// ConfigMaps) and
// registers it with mgr. It needs c's engine, pipeline and commit-status
// feedback; the requests legate raises itself reach the reconcilers
// through c.configRequests and c.sourceRequests.
func (c *Controller) setupReconcilers(mgr manager.Manager, skipNameValidation bool) error {
	dir, err := kubesrc.ReadPolicyDir(c.opts.PolicyDir)
	if err != nil {
		return err
	}
	s := &shared{
		client: c.client, cache: mgr.GetClient(), core: c.core,
		status: &statusWriter{client: c.client, leading: func() bool {
			select {
			case <-mgr.Elected():
				return true
			default:
				return false
			}
		}},
		recorder: c.recorder, log: c.log, home: c.opts.Namespace, watched: c.opts.WatchNamespace,
		rollouts: c.rollouts,
	}
	c.envoyConfigs = newEnvoyConfigReconciler(s)
	c.envoySources = newEnvoySourceReconciler(s, c.opts, c.fetchGuard,
		func() *http.Client { return sources.FluxClient(c.fetchGuard) },
		func() *http.Client { return sources.ForgeClient(c.fetchGuard) }, c.core.Feedback())
	c.envoySources.previews = c.newPreviews(c.envoySources)
	c.policyConfigMaps = newPolicyReconciler(s, dir, c.trigger)
	untaints := &untaintReconciler{shared: s}
	fleets := &envoydeployment.Reconciler{
		Client: c.client, Cache: mgr.GetClient(), Injector: c.opts.Injector,
		Served: envoydeployment.EngineServed(c.core.Engine()), Watches: s.watches, Recorder: c.recorder,
	}
	if fleets.Injector == nil {
		fleets.Injector = webhook.Injector{} // the sidecars' defaults: legate's xDS Service as config/ installs it
	}
	if c.issuer != nil {
		fleets.Issuer = c.issuer
	}
	for _, setup := range []func() error{
		func() error { return c.envoyConfigs.setup(mgr, c.configRequests, skipNameValidation) },
		func() error { return c.envoySources.setup(mgr, c.sourceRequests, skipNameValidation) },
		func() error { return untaints.setup(mgr, skipNameValidation) },
		func() error { return c.policyConfigMaps.setup(mgr, skipNameValidation) },
		func() error { return fleets.SetupWithManager(mgr, skipNameValidation) },
	} {
		if err := setup(); err != nil {
			return err
		}
	}
	return nil
}

// trigger asks for a reconcile of the object a pipeline source name
// stands for (sources.Ref): its work queue holds it until a worker takes
// it, once however often it is asked for.
func (c *Controller) trigger(source string) {
	r, ok := sources.ParseRef(source)
	if !ok {
		return
	}
	key := types.NamespacedName{Namespace: r.Namespace, Name: r.Name}
	switch r.Kind {
	case sources.RefEnvoyConfig:
		c.configRequests.add(key)
	case sources.RefEnvoySource:
		c.sourceRequests.add(key)
	}
}

// outcome asks for a status update of the object whose node an engine
// outcome concerns (a publication, an answer, a rollback).
func (c *Controller) outcome(o revisions.Outcome) { c.trigger(o.Origin.Source) }

// rolloutMoved asks for a status update of the object whose node's
// rollout moved (a gate, a step, a command, its end).
func (c *Controller) rolloutMoved(m revisions.RolloutMove) { c.trigger(m.Source) }

// sourceRefs are the objects whose sources run, sorted: the status API
// and page list them (http.go).
func (c *Controller) sourceRefs() []sources.Ref {
	var out []sources.Ref
	if c.envoyConfigs != nil {
		out = append(out, c.envoyConfigs.refs()...)
	}
	if c.envoySources != nil {
		out = append(out, c.envoySources.drivers.Refs()...)
	}
	slices.SortFunc(out, func(a, b sources.Ref) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// policies is the set every render obeys now.
func (c *Controller) policies() map[string][]byte { return c.policyConfigMaps.set.Current() }

// readPolicies reads the policy set in force from the policy directory and
// the labelled ConfigMaps (admission.go).
func (c *Controller) readPolicies(ctx context.Context) (map[string][]byte, error) {
	return c.policyConfigMaps.read(ctx)
}

// lookupReporter finds the commit-status reporter of a target the
// dispatcher has statuses for (forge.DispatcherOptions.Lookup).
func (c *Controller) lookupReporter(target string) (forge.Reporter, error) {
	return c.envoySources.commitStatuses.Lookup(target)
}

// setRollout takes obj's spec.rollout as source's plan before its content
// is synced. A policy that does not compile stops the reconcile with a
// warning event naming the field: publishing the content to every proxy
// at once is exactly what its author asked not to happen.
func (s *shared) setRollout(ctx context.Context, obj client.Object, source string, spec *v1alpha1.RolloutSpec) error {
	err := s.rollouts.Set(source, spec)
	if err == nil {
		return nil
	}
	if obj.GetUID() == "" { // only its key: read it for the event's reference
		if gerr := s.cache.Get(ctx, client.ObjectKeyFromObject(obj), obj); gerr != nil {
			return fmt.Errorf("%s: %w", source, err)
		}
	}
	s.recorder.Eventf(obj, nil, corev1.EventTypeWarning, "InvalidRollout", "Reconcile", "%s: nothing is published until it is fixed", err)
	return fmt.Errorf("%s: %w", source, err)
}
