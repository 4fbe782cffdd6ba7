package kuberollout

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/core"
	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/rollout/analysis"
	"github.com/legate-dev/legate/tenancy"
)

// Analyses runs the analysis of a source's plan with header values read
// from Secrets of the source's own namespace only: a tenant's check never
// sees another namespace's Secret nor the controller's files.
type Analyses struct {
	Plans  *Plans
	Reader client.Reader
}

// Analyze implements rollout.Analyzer.
func (a Analyses) Analyze(ctx context.Context, s rollout.Subject) (rollout.Verdict, string, error) {
	plan := a.Plans.Plan(s.Source)
	if plan == nil {
		return rollout.VerdictPass, "no analysis configured", nil
	}
	spec, err := core.AnalysisSpec(plan.Analysis, "spec.rollout.analysis")
	if err != nil || spec == nil {
		return rollout.VerdictPass, "no analysis configured", err
	}
	runner := analysis.NewRunner(analysis.Options{Secrets: namespacedSecrets{reader: a.Reader, namespace: tenancy.TenantOf(s.Source)}})
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
