package kuberollout

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/core"
	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/sources"
)

// Plans holds the compiled spec.rollout of each source (an EnvoyConfig or
// an EnvoySource) that has one; the engine looks a source's plan up when
// it publishes the source's new content (core.Options.Rollouts is Plan).
// The reconciler sets a source's plan before it hands the content over.
// Its methods are safe for concurrent use; the zero value holds no plan.
type Plans struct {
	mu    sync.RWMutex
	plans map[string]*rollout.Plan
}

// Plan is source's plan, nil for none.
func (p *Plans) Plan(source string) *rollout.Plan {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.plans[source]
}

// Set compiles spec (nil: no rollout) as source's plan. A policy the
// API server's schema let through but the compiler refuses (a share
// smaller than an earlier step's, say) leaves the source without a plan
// and returns the error naming the field, for the object's status.
func (p *Plans) Set(source string, spec *v1alpha1.RolloutSpec) error {
	var plan *rollout.Plan
	var err error
	if spec != nil {
		plan, err = PlanOf(spec)
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

// Load reads the spec.rollout of every EnvoyConfig and EnvoySource of
// namespace ("" for all) through reader. The home calls it before the
// engine takes up the stored rollouts (Restore, Lead): a rollout under way
// continues after a restart or a failover only when its plan is known
// then; without it the engine would take the policy for removed and
// publish the candidate to every proxy.
func (p *Plans) Load(ctx context.Context, reader client.Reader, namespace string) error {
	var opts []client.ListOption
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	var ecs v1alpha1.EnvoyConfigList
	var ess v1alpha1.EnvoySourceList
	if err := reader.List(ctx, &ecs, opts...); err != nil {
		return fmt.Errorf("read the EnvoyConfigs' rollout policies: %w", err)
	}
	if err := reader.List(ctx, &ess, opts...); err != nil {
		return fmt.Errorf("read the EnvoySources' rollout policies: %w", err)
	}
	// A policy that does not compile is told by the object's reconcile.
	for _, ec := range ecs.Items {
		_ = p.Set(sources.EnvoyConfigRef(ec.Namespace, ec.Name).String(), ec.Spec.Rollout)
	}
	for _, es := range ess.Items {
		_ = p.Set(sources.EnvoySourceRef(es.Namespace, es.Name).String(), es.Spec.Rollout)
	}
	return nil
}

// PlanOf converts the API's rollout to the engine's policy: the two have
// the same field names (the API writes a timed pause as {duration: 30s}
// and a share of nodes as a list of one percentage, which the policy
// reads too).
func PlanOf(spec *v1alpha1.RolloutSpec) (*rollout.Plan, error) {
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
