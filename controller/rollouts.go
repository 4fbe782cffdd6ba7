package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/core"
	"github.com/legate-dev/legate/pipeline/readiness"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/rollout/analysis"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/tenancy"
)

// rolloutPlans holds the compiled spec.rollout of each source (an
// EnvoyConfig or an EnvoySource) that has one; the engine looks a
// source's plan up when it publishes the source's new content. The
// reconciler sets a source's plan before it hands the content over.
type rolloutPlans struct {
	mu    sync.RWMutex
	plans map[string]*rollout.Plan
}

func (p *rolloutPlans) plan(source string) *rollout.Plan {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.plans[source]
}

// set compiles spec (nil: no rollout) as source's plan. A policy the
// API server's schema let through but the compiler refuses (a share
// smaller than an earlier step's, say) leaves the source without a plan
// and returns the error naming the field, for the object's status.
func (p *rolloutPlans) set(source string, spec *v1alpha1.RolloutSpec) error {
	var plan *rollout.Plan
	var err error
	if spec != nil {
		plan, err = planOf(spec)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if plan == nil {
		delete(p.plans, source)
	} else {
		if p.plans == nil {
			p.plans = map[string]*rollout.Plan{}
		}
		p.plans[source] = plan
	}
	return err
}

// planOf converts the API's rollout to the engine's policy: the two have
// the same field names (the API writes a timed pause as {duration: 30s}
// and a share of nodes as a list of one percentage, which the policy
// reads too).
func planOf(spec *v1alpha1.RolloutSpec) (*rollout.Plan, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("spec.rollout: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var policy rollout.Policy
	if err := dec.Decode(&policy); err != nil {
		return nil, fmt.Errorf("spec.rollout: %w", err)
	}
	plan, err := policy.Compile("spec.rollout")
	if err != nil {
		return nil, err
	}
	if _, err := core.AnalysisSpec(plan.Analysis, "spec.rollout.analysis"); err != nil {
		return nil, err
	}
	return plan, nil
}

// rolloutAnalyses runs the analysis of a source's plan with header values
// read from Secrets of the source's own namespace only: a tenant's check
// never sees another namespace's Secret nor the controller's files.
type rolloutAnalyses struct {
	plans  *rolloutPlans
	reader client.Reader
}

// Analyze implements rollout.Analyzer.
func (a rolloutAnalyses) Analyze(ctx context.Context, s rollout.Subject) (rollout.Verdict, string, error) {
	plan := a.plans.plan(s.Source)
	if plan == nil {
		return rollout.VerdictPass, "no analysis configured", nil
	}
	spec, err := core.AnalysisSpec(plan.Analysis, "spec.rollout.analysis")
	if err != nil || spec == nil {
		return rollout.VerdictPass, "no analysis configured", err
	}
	runner := analysis.NewRunner(analysis.Options{Secrets: namespacedSecrets{reader: a.reader, namespace: tenancy.TenantOf(s.Source)}})
	return core.Analyses{Specs: map[string]*analysis.Spec{s.Source: spec}, Runner: runner}.Analyze(ctx, s)
}

// namespacedSecrets resolves a header's secretKeyRef in one namespace.
type namespacedSecrets struct {
	reader    client.Reader
	namespace string
}

// Resolve implements analysis.SecretResolver.
func (n namespacedSecrets) Resolve(ctx context.Context, src analysis.ValueSource) (string, error) {
	ref := src.SecretKeyRef
	if ref == nil {
		return "", errors.New("only secretKeyRef is available in the cluster (a file would be the controller's)")
	}
	if n.namespace == "" {
		return "", errors.New("the source has no namespace to read Secrets from")
	}
	var secret corev1.Secret
	if err := n.reader.Get(ctx, types.NamespacedName{Namespace: n.namespace, Name: ref.Name}, &secret); err != nil {
		// The error names the Secret, never its data.
		return "", fmt.Errorf("secret %s/%s: %w", n.namespace, ref.Name, err)
	}
	value, ok := secret.Data[ref.Key]
	if !ok {
		return "", fmt.Errorf("secret %s/%s has no key %q", n.namespace, ref.Name, ref.Key)
	}
	return string(value), nil
}

// rolloutViews are the rollouts of those of nodes that source owns:
// nothing of a node another namespace serves reaches a status.
func (s *shared) rolloutViews(source string, nodes []string) []revisions.RolloutView {
	var out []revisions.RolloutView
	for _, id := range nodes {
		if v, ok := s.core.Engine().Rollout(id); ok && v.Source == source {
			out = append(out, v)
		}
	}
	return out
}

// announceRollout records the events of obj's rollout going from was to
// now (readiness.RolloutEvents).
func (s *shared) announceRollout(obj runtime.Object, was, now *v1alpha1.RolloutStatus) {
	for _, ev := range readiness.RolloutEvents(was, now) {
		s.recorder.Eventf(obj, nil, ev.Type, ev.Reason, "Rollout", "%s", ev.Note)
	}
}

// rolloutCommand carries out cmd, the legate.dev/rollout annotation of
// obj (which source stands for), on the rollout under way at each of
// nodes that source owns, then removes the annotation. A command that
// cannot be carried out (unknown, no rollout of this object's under way)
// is removed too, with a Warning event saying why: refusal when none of
// nodes is this object's, worded by the caller so that it says nothing of
// whether another namespace serves them.
func (s *shared) rolloutCommand(ctx context.Context, obj client.Object, source string, nodes []string, cmd, refusal string) error {
	var warnings, done []string
	switch c := rollout.Command(cmd); c {
	case rollout.CommandPromote, rollout.CommandPause, rollout.CommandResume, rollout.CommandAbort:
		owned := slices.DeleteFunc(slices.Clone(nodes), func(id string) bool { return s.core.Owner(id) != source })
		if len(owned) == 0 {
			warnings = append(warnings, refusal)
			break
		}
		for _, v := range s.rolloutViews(source, owned) {
			if v.Status.Phase.Done() && len(owned) > 1 {
				continue // an EnvoySource's node this commit left alone
			}
			if _, err := s.core.Engine().RolloutCommand(ctx, v.Node, c); err != nil {
				if errors.Is(err, revisions.ErrNotLeader) {
					return err // the leader will do it
				}
				warnings = append(warnings, err.Error())
				continue
			}
			done = append(done, v.Node)
		}
		if len(done) == 0 && len(warnings) == 0 {
			warnings = append(warnings, "no rollout is under way")
		}
	default:
		warnings = append(warnings, fmt.Sprintf("%q is not promote, pause, resume or abort", cmd))
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+v1alpha1.RolloutAnnotation+`":null}}}`))
	if err := s.client.Patch(ctx, obj, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	if len(done) > 0 {
		s.recorder.Eventf(obj, nil, corev1.EventTypeNormal, "RolloutCommand", "Reconcile", "%s=%s carried out on node %s", v1alpha1.RolloutAnnotation, cmd, strings.Join(done, ", "))
	}
	if len(warnings) > 0 {
		note := readiness.Bounded(v1alpha1.RolloutAnnotation+"="+cmd+": "+strings.Join(warnings, "; "), 1024)
		s.recorder.Eventf(obj, nil, corev1.EventTypeWarning, "RolloutCommandRefused", "Reconcile", "%s", note)
	}
	return nil
}

// loadPlans reads the spec.rollout of every EnvoyConfig and EnvoySource
// reconciled here before the engine takes up the stored rollouts (Restore,
// Lead): a rollout under way continues after a restart or a failover only
// when its plan is known then; without it the engine would take the
// policy for removed and publish the candidate to every proxy.
func (c *Controller) loadPlans(ctx context.Context) error {
	var opts []client.ListOption
	if c.opts.WatchNamespace != "" {
		opts = append(opts, client.InNamespace(c.opts.WatchNamespace))
	}
	var ecs v1alpha1.EnvoyConfigList
	var ess v1alpha1.EnvoySourceList
	if err := c.client.List(ctx, &ecs, opts...); err != nil {
		return fmt.Errorf("read the EnvoyConfigs' rollout policies: %w", err)
	}
	if err := c.client.List(ctx, &ess, opts...); err != nil {
		return fmt.Errorf("read the EnvoySources' rollout policies: %w", err)
	}
	// A policy that does not compile is told by the object's reconcile.
	for _, ec := range ecs.Items {
		_ = c.rollouts.set(sources.EnvoyConfigRef(ec.Namespace, ec.Name).String(), ec.Spec.Rollout)
	}
	for _, es := range ess.Items {
		_ = c.rollouts.set(sources.EnvoySourceRef(es.Namespace, es.Name).String(), es.Spec.Rollout)
	}
	return nil
}
