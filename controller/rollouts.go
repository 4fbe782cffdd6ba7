package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/core"
	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/rollout/analysis"
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
