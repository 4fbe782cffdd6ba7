package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/pipeline"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/sources/flux"
	gitsource "github.com/legate-dev/legate/sources/git"
	ocisource "github.com/legate-dev/legate/sources/oci"
)

// +kubebuilder:rbac:groups=legate.dev,resources=envoysources,verbs=get;list;watch
// +kubebuilder:rbac:groups=legate.dev,resources=envoysources/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories;ocirepositories,verbs=get;list;watch

// Bounds of an EnvoySource's schedule.
const (
	// MinInterval is the shortest interval between two fetches honoured.
	MinInterval = 5 * time.Second
	// fetchRetry is the wait after a failed fetch when the interval is
	// longer.
	fetchRetry = 30 * time.Second
	// maxDiagnostics is how many diagnostics a status lists, and
	// maxDiagnosticText the longest each may be.
	maxDiagnostics    = 10
	maxDiagnosticText = 1024
)

// sourceKey is the pipeline's name of an EnvoySource.
func sourceKey(key types.NamespacedName) string {
	return "envoysource/" + key.Namespace + "/" + key.Name
}

// driver is the fetching half of one EnvoySource, rebuilt when its spec or
// its credentials change.
type driver struct {
	src sources.Source
	// built identifies what it was built from: the generation and the
	// resource version of its credentials Secret.
	built string
}

// ReconcileSource fetches one EnvoySource, runs it through the pipeline
// and writes its status.
func (c *Controller) reconcileSource(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if !c.watches(req.Namespace) {
		return ctrl.Result{}, nil
	}
	if res, wait := c.waitForLead(); wait {
		return res, nil
	}
	name := sourceKey(req.NamespacedName)
	var es v1alpha1.EnvoySource
	if err := c.client.Get(ctx, req.NamespacedName, &es); err != nil {
		if apierrors.IsNotFound(err) {
			c.sourceGone(ctx, name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	before := es.Status.DeepCopy()
	s := &es.Status
	s.ObservedGeneration = es.Generation
	if token, ok := es.Annotations[v1alpha1.ReconcileRequestAnnotation]; ok {
		s.LastHandledReconcileAt = token
	}
	interval := max(es.Spec.Interval.Duration, MinInterval)
	if es.Spec.Suspend {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{
			Type: v1alpha1.ConditionReconciling, Status: metav1.ConditionFalse, Reason: "Suspended",
			Message: "spec.suspend is true: nothing is fetched until it is false", ObservedGeneration: es.Generation,
		})
		return ctrl.Result{}, c.writeSourceStatus(ctx, &es, before)
	}

	var st *pipeline.Status
	res, reason, err := c.fetchSource(ctx, &es, name)
	if errors.Is(err, errTurn) {
		c.log.V(1).Info("fetch waits for its namespace's turn", "source", name)
		return ctrl.Result{RequeueAfter: sources.FairRetry}, nil
	}
	// The reporter is in place before the pipeline runs: the outcomes of
	// this pass (published, then answered, possibly within milliseconds)
	// get their statuses.
	if es.Spec.CommitStatus == nil || es.Spec.Git != nil || res != nil {
		if err := c.configureStatuses(&es, name, repositoryOf(&es, res)); err != nil {
			c.recorder.Eventf(&es, nil, corev1.EventTypeWarning, "CommitStatusMisconfigured", "Reconcile", "%s", err.Error())
		}
	}
	if err == nil {
		sync := c.pipeline.Sync(ctx, name, res)
		st = &sync
		s.LastAttemptedRevision = res.Origin.Revision()
		s.LastAppliedRevision = sync.AppliedRevision
		s.Nodes = sync.Nodes
		s.Diagnostics = diagnosticsOf(sync, res.Origin.Path)
		if es.Spec.SourceRef != nil {
			s.ArtifactDigest = res.Origin.Digest
		}
	}
	var verdicts []nodeVerdict
	if st != nil && !st.Invalid {
		for _, id := range st.Nodes {
			node, _ := c.engine.Node(id)
			verdicts = append(verdicts, verdictOf(node, name))
		}
	}
	judge(es.Generation, st, reason, err, verdicts).set(&s.Conditions)
	if err := c.writeSourceStatus(ctx, &es, before); err != nil {
		return ctrl.Result{}, err
	}
	switch {
	case meta.IsStatusConditionTrue(s.Conditions, v1alpha1.ConditionReconciling) && err == nil:
		return ctrl.Result{RequeueAfter: min(requeueAfter, interval)}, nil
	case err != nil:
		return ctrl.Result{RequeueAfter: min(fetchRetry, interval)}, nil
	}
	return ctrl.Result{RequeueAfter: interval}, nil
}

// writeSourceStatus updates es's status when it changed, and tells of a
// changed verdict with an event.
func (c *Controller) writeSourceStatus(ctx context.Context, es *v1alpha1.EnvoySource, before *v1alpha1.EnvoySourceStatus) error {
	x, y := *before, es.Status
	x.Conditions, y.Conditions = withoutTransitions(x.Conditions), withoutTransitions(y.Conditions)
	if equality.Semantic.DeepEqual(x, y) {
		return nil
	}
	if err := c.client.Status().Update(ctx, es); err != nil {
		if apierrors.IsConflict(err) {
			return nil // written meanwhile; the next pass reads it again
		}
		return err
	}
	c.announce(es, meta.FindStatusCondition(before.Conditions, v1alpha1.ConditionReady), meta.FindStatusCondition(es.Status.Conditions, v1alpha1.ConditionReady))
	return nil
}

// errTurn is a fetch that must wait for its namespace's turn (fairShare).
var errTurn = errors.New("the namespace runs as many fetches as it may")

// fetchSource fetches es through its driver, when its namespace's turn
// allows (errTurn when not), within the per-fetch timeout; on failure it
// returns the Ready reason with the error.
func (c *Controller) fetchSource(ctx context.Context, es *v1alpha1.EnvoySource, name string) (*sources.Result, string, error) {
	d, err := c.driverOf(ctx, es, name)
	if err != nil {
		return nil, ReasonInvalidSpec, err
	}
	if !c.fetches.Acquire(es.Namespace) {
		return nil, "", errTurn
	}
	defer c.fetches.Release(es.Namespace)
	fctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := d.src.Fetch(fctx)
	var over *sources.LimitError
	switch {
	case errors.Is(err, flux.ErrDigestMismatch):
		return nil, ReasonDigestMismatch, err
	case errors.As(err, &over):
		return nil, ReasonFetchFailed, fmt.Errorf("EnvoySource %s/%s: %w", es.Namespace, es.Name, err)
	case err != nil && fctx.Err() != nil && ctx.Err() == nil:
		return nil, ReasonFetchFailed, fmt.Errorf("EnvoySource %s/%s: the fetch was stopped at the per-fetch timeout of %s: %w", es.Namespace, es.Name, c.timeout, err)
	case err != nil:
		return nil, ReasonFetchFailed, err
	}
	return res, "", nil
}

// driverOf returns es's driver, built anew when its spec or credentials
// changed since the last one.
func (c *Controller) driverOf(ctx context.Context, es *v1alpha1.EnvoySource, name string) (*driver, error) {
	var secret *corev1.Secret
	built := fmt.Sprint(es.Generation)
	if ref := credentialsOf(es); ref != "" {
		secret = &corev1.Secret{}
		if err := c.client.Get(ctx, types.NamespacedName{Namespace: es.Namespace, Name: ref}, secret); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("EnvoySource %s/%s: secretRef: Secret %s/%s does not exist", es.Namespace, es.Name, es.Namespace, ref)
			}
			return nil, fmt.Errorf("EnvoySource %s/%s: read Secret %s/%s: %w", es.Namespace, es.Name, es.Namespace, ref, err)
		}
		built += "/" + secret.ResourceVersion
	}
	c.mu.Lock()
	d := c.drivers[name]
	c.mu.Unlock()
	if d != nil && d.built == built {
		return d, nil
	}
	src, err := c.buildDriver(es, name, secret)
	if err != nil {
		return nil, err
	}
	d = &driver{src: src, built: built}
	c.mu.Lock()
	c.drivers[name] = d
	c.mu.Unlock()
	c.budget.Release(name) // the files of the driver replaced are garbage
	return d, nil
}

// repositoryOf is the URL of the repository es's commits come from: its
// Git URL, or what the last fetch said (a Flux object's spec.url).
func repositoryOf(es *v1alpha1.EnvoySource, res *sources.Result) string {
	switch {
	case es.Spec.Git != nil:
		return es.Spec.Git.URL
	case res != nil && res.Origin.Kind == sources.KindGit:
		return res.Origin.URL
	}
	return ""
}

func credentialsOf(es *v1alpha1.EnvoySource) string {
	switch {
	case es.Spec.Git != nil && es.Spec.Git.SecretRef != nil:
		return es.Spec.Git.SecretRef.Name
	case es.Spec.OCI != nil && es.Spec.OCI.SecretRef != nil:
		return es.Spec.OCI.SecretRef.Name
	}
	return ""
}

// buildDriver constructs the driver of es; it touches neither the network
// nor the clone. Credentials follow Flux's Secret keys.
func (c *Controller) buildDriver(es *v1alpha1.EnvoySource, name string, secret *corev1.Secret) (sources.Source, error) {
	field := func(err error) error { return fmt.Errorf("EnvoySource %s/%s: %w", es.Namespace, es.Name, err) }
	data := func(k string) string {
		if secret == nil {
			return ""
		}
		return string(secret.Data[k])
	}
	switch spec := es.Spec; {
	case spec.Git != nil:
		cfg := gitsource.Config{Name: name, URL: spec.Git.URL, Path: spec.Path, StateDir: c.opts.StateDir, Timeout: c.timeout, Budget: c.budget}
		cfg.Guard = c.fetchGuard
		if r := spec.Git.Ref; r != nil {
			cfg.Ref = gitsource.Ref{Branch: r.Branch, Tag: r.Tag, SemVer: r.SemVer, Name: r.Name, Commit: r.Commit}
		}
		cfg.Auth = gitsource.Auth{
			Username: data("username"), Password: sources.Literal(data("password")),
			BearerToken: sources.Literal(data("bearerToken")), SSHKey: sources.Literal(data("identity")),
			KnownHosts: data("known_hosts"),
		}
		if data("identity") != "" {
			cfg.Auth.Password, cfg.Auth.SSHKeyPassphrase = sources.Secret{}, sources.Literal(data("password"))
		}
		src, err := gitsource.New(cfg)
		if err != nil {
			return nil, field(fmt.Errorf("spec.git: %w", err))
		}
		return src, nil
	case spec.OCI != nil:
		cfg := ocisource.Config{Name: name, URL: spec.OCI.URL, Path: spec.Path, Timeout: c.timeout, Budget: c.budget}
		cfg.Guard = c.fetchGuard
		if r := spec.OCI.Ref; r != nil {
			cfg.Ref = ocisource.Ref{Tag: r.Tag, SemVer: r.SemVer, Digest: r.Digest}
		}
		if secret != nil {
			cfg.DockerConfigJSON = secret.Data[corev1.DockerConfigJsonKey]
			if cfg.DockerConfigJSON == nil {
				return nil, field(fmt.Errorf("spec.oci.secretRef: Secret %s has no %s entry (a kubernetes.io/dockerconfigjson Secret)", secret.Name, corev1.DockerConfigJsonKey))
			}
		}
		src, err := ocisource.New(cfg)
		if err != nil {
			return nil, field(fmt.Errorf("spec.oci: %w", err))
		}
		return src, nil
	case spec.SourceRef != nil:
		ns := cmp.Or(spec.SourceRef.Namespace, es.Namespace)
		if ns != es.Namespace {
			return nil, field(fmt.Errorf("spec.sourceRef.namespace %q: an EnvoySource reads Flux sources of its own namespace (%s) only", ns, es.Namespace))
		}
		src, err := flux.New(flux.Config{
			Name: name, Reader: c.mgr.GetClient(), Kind: spec.SourceRef.Kind,
			Key: types.NamespacedName{Namespace: ns, Name: spec.SourceRef.Name}, Path: spec.Path, HTTP: sources.FluxClient(c.fetchGuard),
			Timeout: c.timeout, Budget: c.budget,
		})
		if err != nil {
			return nil, field(fmt.Errorf("spec.sourceRef: %w", err))
		}
		return src, nil
	}
	return nil, field(errors.New("spec: set one of git, oci and sourceRef"))
}

// sourceGone stops serving the nodes a deleted EnvoySource rendered.
func (c *Controller) sourceGone(ctx context.Context, name string) {
	c.forgetSource(ctx, name)
	c.dropReporter(name)
	c.mu.Lock()
	delete(c.drivers, name)
	c.mu.Unlock()
	c.budget.Release(name)
}

// forgetSource stops serving the nodes source owns and releases them, its
// claims too, to the sources that were refused them.
func (c *Controller) forgetSource(ctx context.Context, source string) {
	c.pipeline.Remove(ctx, source)
}

// diagnosticsOf lists the first problems of a rejected render, each with
// its file:line from the repository root (the render read dir).
func diagnosticsOf(st pipeline.Status, dir string) []string {
	var out []string
	for _, d := range st.Diagnostics {
		if len(out) == maxDiagnostics {
			break
		}
		d.Pos = d.Pos.InDir(dir)
		out = append(out, bounded(d.String(), maxDiagnosticText))
	}
	if extra := st.DiagnosticCount - len(out); extra > 0 && len(out) == maxDiagnostics {
		out = append(out, fmt.Sprintf("and %d more", extra))
	}
	if !st.Invalid {
		for _, p := range st.Problems() {
			if len(out) < maxDiagnostics {
				out = append(out, bounded(p, maxDiagnosticText))
			}
		}
	}
	return out
}

// withoutTransitions is a copy of cs without the times they last changed,
// to compare what two statuses say.
func withoutTransitions(cs []metav1.Condition) []metav1.Condition {
	out := slices.Clone(cs)
	for i := range out {
		out[i].LastTransitionTime = metav1.Time{}
	}
	return out
}

// watchSources registers the EnvoySource reconciler, with its fetch
// workers shared fairly between namespaces, and watches Flux's source
// objects when their CRDs are installed, so that a new artifact is read at
// once rather than at the next interval.
func (c *Controller) watchSources(skipNameValidation bool) error {
	o := c.opts
	workers := cmp.Or(max(o.FetchWorkers, 0), sources.DefaultFetchWorkers)
	c.budget = sources.NewBudget(o.SourceMaxBytes, o.SourcesMaxBytes)
	c.fetches = sources.NewFairShare(workers, cmp.Or(max(o.FetchesPerNamespace, 0), sources.DefaultFetchesPerNamespace))
	c.timeout = cmp.Or(max(o.FetchTimeout, 0), sources.DefaultFetchTimeout)
	b := ctrl.NewControllerManagedBy(c.mgr).For(&v1alpha1.EnvoySource{}).Named("envoysource").
		WithOptions(crcontroller.Options{SkipNameValidation: &skipNameValidation, MaxConcurrentReconciles: workers}).
		WatchesRawSource(source.Channel(c.sourceEv, &handler.EnqueueRequestForObject{}))
	for _, kind := range []string{flux.KindGitRepository, flux.KindOCIRepository} {
		gvk := flux.GroupVersion.WithKind(kind)
		if _, err := c.mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			c.log.V(1).Info("Flux source kind not installed; EnvoySources that refer to it are read at their interval", "kind", kind)
			continue
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		b = b.Watches(obj, handler.EnqueueRequestsFromMapFunc(c.referrers(kind)))
	}
	if err := b.Complete(reconcile.Func(c.reconcileSource)); err != nil {
		return fmt.Errorf("EnvoySource reconciler: %w", err)
	}
	return nil
}

// referrers maps a Flux object to the EnvoySources of its namespace that
// refer to it.
func (c *Controller) referrers(kind string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list v1alpha1.EnvoySourceList
		if err := c.mgr.GetClient().List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
			c.log.Error(err, "could not list the EnvoySources that may refer to a Flux source", "kind", kind, "object", client.ObjectKeyFromObject(obj))
			return nil
		}
		var out []reconcile.Request
		for _, es := range list.Items {
			ref := es.Spec.SourceRef
			if ref != nil && ref.Kind == kind && ref.Name == obj.GetName() && cmp.Or(ref.Namespace, es.Namespace) == obj.GetNamespace() {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&es)})
			}
		}
		return out
	}
}
