package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/forge/kubeforge"
	"github.com/legate-dev/legate/netguard"
	"github.com/legate-dev/legate/pipeline"
	"github.com/legate-dev/legate/pipeline/readiness"
	"github.com/legate-dev/legate/preview/kubepreview"
	"github.com/legate-dev/legate/rollout/kuberollout"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/sources/envoysource"
	"github.com/legate-dev/legate/sources/flux"
)

// The patch removes a handled legate.dev/rollout annotation, nothing else.
// +kubebuilder:rbac:groups=legate.dev,resources=envoysources,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=legate.dev,resources=envoysources/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories;ocirepositories,verbs=get;list;watch

// envoySourceReconciler fetches each EnvoySource, runs what it fetched
// through the pipeline and has its status written. It owns the drivers of
// the EnvoySources, the fetch limits they share and their commit-status
// reporters.
type envoySourceReconciler struct {
	*shared
	drivers        *envoysource.Drivers
	workers        int
	commitStatuses *kubeforge.Reporters
	previews       *kubepreview.Previews // spec.previews (previews.go)
}

// newEnvoySourceReconciler builds the reconciler with o's fetch limits;
// guard, fluxClient and forgeClient are the fetch guard's
// (sources.NewFetchGuard, FluxClient, ForgeClient).
func newEnvoySourceReconciler(s *shared, o Options, guard *netguard.Guard, fluxClient, forgeClient func() *http.Client, feedback *forge.Feedback) *envoySourceReconciler {
	return &envoySourceReconciler{
		shared: s, workers: o.Fetch.WithDefaults().Workers,
		drivers:        envoysource.NewLimitedDrivers(envoysource.Env{StateDir: o.StateDir, Guard: guard, Flux: s.cache, FluxHTTP: fluxClient}, o.Fetch),
		commitStatuses: kubeforge.New(s.client, s.cache, feedback, forgeClient),
	}
}

// Reconcile fetches one EnvoySource, runs it through the pipeline and
// writes its status.
func (r *envoySourceReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if !r.watches(req.Namespace) {
		return ctrl.Result{}, nil
	}
	if res, wait := r.waitForLead(); wait {
		return res, nil
	}
	name := sources.EnvoySourceRef(req.Namespace, req.Name).String()
	var es v1alpha1.EnvoySource
	if err := r.client.Get(ctx, req.NamespacedName, &es); err != nil {
		if apierrors.IsNotFound(err) {
			r.gone(ctx, name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	interval := es.Spec.Interval.Duration // as this pass read it
	if es.Spec.Suspend {
		return ctrl.Result{}, r.writeStatus(ctx, &es, func(s *v1alpha1.EnvoySourceStatus) {
			meta.SetStatusCondition(&s.Conditions, metav1.Condition{
				Type: v1alpha1.ConditionReconciling, Status: metav1.ConditionFalse, Reason: "Suspended",
				Message: "spec.suspend is true: nothing is fetched until it is false", ObservedGeneration: es.Generation,
			})
		})
	}

	res, fetchErr := r.drivers.Fetch(ctx, r.client, &es, name)
	reason := fetchReason(fetchErr)
	if errors.Is(fetchErr, envoysource.ErrTurn) {
		r.log.V(1).Info("fetch waits for its namespace's turn", "source", name)
		return ctrl.Result{RequeueAfter: sources.FairRetry}, nil
	}
	// The reporter is in place before the pipeline runs: the outcomes of
	// this pass (published, then answered, possibly within milliseconds)
	// get their commit statuses.
	if es.Spec.CommitStatus == nil || es.Spec.Git != nil || res != nil {
		if err := r.commitStatuses.Configure(&es, name, envoysource.Repository(&es, res)); err != nil {
			r.warn(&es, "CommitStatusMisconfigured", "Reconcile", err.Error())
		}
	}
	var synced *pipeline.Status
	if fetchErr == nil {
		if err := r.setRollout(ctx, &es, name, es.Spec.Rollout); err != nil {
			return ctrl.Result{}, err
		}
		st := r.core.Pipeline().Sync(ctx, name, res)
		synced = &st
	}
	// Previews after the sync: they compare with what the source serves
	// now, and their forge client is the one configured above.
	previews := r.previews.Sync(ctx, &es, name)
	nodes := es.Status.Nodes
	if synced != nil {
		nodes = synced.Nodes
	}
	if cmd := es.Annotations[v1alpha1.RolloutAnnotation]; cmd != "" {
		if err := r.rolloutCommand(ctx, &es, name, nodes, cmd, "no rollout of this EnvoySource is under way"); err != nil {
			return ctrl.Result{}, err
		}
	}
	ro := readiness.RolloutStatus(kuberollout.Views(r.core.Engine(), name, nodes))
	verdicts := readiness.SourceVerdicts(synced, name, r.core.Engine().Node)
	var reconciling bool
	err := r.writeStatus(ctx, &es, func(s *v1alpha1.EnvoySourceStatus) {
		readiness.EnvoySourceStatus(s, &es, res, synced, reason, fetchErr, verdicts)
		s.Previews = previews
		s.Rollout = ro.DeepCopy()
		readiness.SetProgressing(&s.Conditions, es.Generation, ro)
		reconciling = meta.IsStatusConditionTrue(s.Conditions, v1alpha1.ConditionReconciling)
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: envoysource.NextFetch(interval, fetchErr != nil, reconciling, requeueAfter)}, nil
}

// writeStatus has es's status written as fill leaves it, on top of the
// latest status, for the generation (and reconcile request) of es as this
// pass read it; a changed verdict is told with an event.
func (r *envoySourceReconciler) writeStatus(ctx context.Context, es *v1alpha1.EnvoySource, fill func(*v1alpha1.EnvoySourceStatus)) error {
	gen := es.Generation
	token, asked := es.Annotations[v1alpha1.ReconcileRequestAnnotation]
	var latest v1alpha1.EnvoySource
	var was, now *metav1.Condition
	var wasRO *v1alpha1.RolloutStatus
	wrote, err := r.status.update(ctx, client.ObjectKeyFromObject(es), &latest, func() bool {
		before := latest.Status.DeepCopy()
		s := &latest.Status
		s.ObservedGeneration = gen
		if asked {
			s.LastHandledReconcileAt = token
		}
		fill(s)
		was, now, wasRO = readiness.ReadyOf(before.Conditions), readiness.ReadyOf(s.Conditions), before.Rollout
		return !readiness.EqualSourceStatus(before, s)
	})
	if err != nil {
		return err
	}
	if wrote {
		r.announce(&latest, was, now)
		r.announceRollout(&latest, wasRO, latest.Status.Rollout)
	}
	return nil
}

// fetchReason is the Ready reason of a failed fetch ("" when it did not
// fail).
func fetchReason(err error) string {
	var spec *envoysource.SpecError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &spec):
		return readiness.ReasonInvalidSpec
	case errors.Is(err, flux.ErrDigestMismatch):
		return readiness.ReasonDigestMismatch
	}
	return readiness.ReasonFetchFailed
}

// gone stops serving the nodes a deleted EnvoySource rendered, and
// releases them, its claims too, to the sources that were refused them.
func (r *envoySourceReconciler) gone(ctx context.Context, name string) {
	r.core.Pipeline().Remove(ctx, name)
	r.commitStatuses.Drop(name)
	r.previews.Drop(name)
	r.drivers.Drop(name)
	_ = r.rollouts.Set(name, nil)
}

// setup registers r with mgr, with its fetch workers shared fairly
// between namespaces, fed by the objects' changes and the requests legate
// raises, and watches Flux's source objects when their CRDs are
// installed, so that a new artifact is read at once rather than at the
// next interval.
func (r *envoySourceReconciler) setup(mgr manager.Manager, raised *requests, skipNameValidation bool) error {
	b := ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.EnvoySource{}).Named("envoysource").
		WithOptions(crcontroller.Options{SkipNameValidation: &skipNameValidation, MaxConcurrentReconciles: r.workers}).
		WatchesRawSource(raised)
	for _, kind := range []string{flux.KindGitRepository, flux.KindOCIRepository} {
		gvk := flux.GroupVersion.WithKind(kind)
		if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			r.log.V(1).Info("Flux source kind not installed; EnvoySources that refer to it are read at their interval", "kind", kind)
			continue
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		b = b.Watches(obj, handler.EnqueueRequestsFromMapFunc(r.referrers(kind)))
	}
	if err := b.Complete(r); err != nil {
		return fmt.Errorf("EnvoySource reconciler: %w", err)
	}
	return nil
}

// referrers maps a Flux object to the EnvoySources of its namespace that
// refer to it.
func (r *envoySourceReconciler) referrers(kind string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list v1alpha1.EnvoySourceList
		if err := r.cache.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
			r.log.Error(err, "could not list the EnvoySources that may refer to a Flux source", "kind", kind, "object", client.ObjectKeyFromObject(obj))
			return nil
		}
		var out []reconcile.Request
		for _, es := range list.Items {
			if envoysource.RefersTo(&es, kind, obj.GetNamespace(), obj.GetName()) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&es)})
			}
		}
		return out
	}
}
