package v1alpha1_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// crdValidator validates objects against a generated CRD the way the API
// server does (OpenAPI schema, then CEL rules), in process: the rules of
// spec.rollout are checked without starting envtest.
type crdValidator struct {
	schema validation.SchemaCreateValidator
	cel    *cel.Validator
	st     *structuralschema.Structural
}

func loadCRD(t *testing.T, file string) *crdValidator {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "crd", file))
	require.NoError(t, err)
	var crd apiextensionsv1.CustomResourceDefinition
	require.NoError(t, yaml.Unmarshal(data, &crd))
	require.Len(t, crd.Spec.Versions, 1)
	var internal apiextensions.JSONSchemaProps
	require.NoError(t, apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, &internal, nil))
	st, err := structuralschema.NewStructural(&internal)
	require.NoError(t, err)
	sv, _, err := validation.NewSchemaValidator(&internal)
	require.NoError(t, err)
	return &crdValidator{schema: sv, cel: cel.NewValidator(st, true, celconfig.PerCallLimit), st: st}
}

func (v *crdValidator) validate(obj map[string]any) field.ErrorList {
	errs := validation.ValidateCustomResource(nil, obj, v.schema)
	celErrs, _ := v.cel.Validate(context.Background(), nil, v.st, obj, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

// object builds an EnvoyConfig or EnvoySource whose spec.rollout is the
// YAML given.
func object(t *testing.T, kind, rollout string) map[string]any {
	t.Helper()
	spec := "nodeID: edge-1\n"
	if kind == "EnvoySource" {
		spec = "git: {url: https://git.example.com/envoy.git}\n"
	}
	spec += "rollout:\n" + indent(rollout)
	var s map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(spec), &s))
	return map[string]any{
		"apiVersion": "legate.dev/v1alpha1", "kind": kind,
		"metadata": map[string]any{"name": "x", "namespace": "default"},
		"spec":     s,
	}
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

const goodRollout = `
steps:
- proxies: 10%
- pause: {duration: 30s}
- nodes: ["edge-canary-*"]
- nodes: ["25%"]
- proxies: 2.5%
- pause: {}
ackTimeout: 30s
maxRestarts: 2
onFailure: pause
analysis:
  metrics:
  - name: error-rate
    interval: 1m
    count: 5
    failureLimit: 1
    successCondition: result[0] < 0.01
    prometheus:
      address: http://prometheus.monitoring:9090
      query: sum(rate(x{node="{{node}}"}[1m]))
  - name: smoke
    http:
      url: https://checks.example.com/legate
      headers:
      - name: Authorization
        valueFrom: {secretKeyRef: {name: check, key: token}}
`

func TestRolloutSchemaRefusesBadPolicies(t *testing.T) {
	for _, kind := range []string{"EnvoyConfig", "EnvoySource"} {
		file := map[string]string{"EnvoyConfig": "legate.dev_envoyconfigs.yaml", "EnvoySource": "legate.dev_envoysources.yaml"}[kind]
		v := loadCRD(t, file)
		t.Run(kind, func(t *testing.T) {
			require.Empty(t, v.validate(object(t, kind, goodRollout)))
			tests := []struct {
				name, rollout, want string
			}{
				{"two kinds in a step", "steps:\n- {proxies: 10%, pause: {}}", "a step sets exactly one of proxies, nodes and pause"},
				{"empty step", "steps:\n- {}", "a step sets exactly one of proxies, nodes and pause"},
				{"percent without %", "steps:\n- proxies: \"10\"", "spec.rollout.steps[0].proxies"},
				{"percent over 100", "steps:\n- proxies: 150%", "spec.rollout.steps[0].proxies"},
				{"share among globs", "steps:\n- nodes: [\"edge-*\", \"25%\"]", "a share of nodes"},
				{"bad glob", "steps:\n- nodes: [\"Edge One\"]", "spec.rollout.steps[0].nodes[0]"},
				{"no steps", "steps: []", "spec.rollout.steps"},
				{"onFailure", "steps:\n- proxies: 10%\nonFailure: explode", "spec.rollout.onFailure"},
				{"negative restarts", "steps:\n- proxies: 10%\nmaxRestarts: -1", "spec.rollout.maxRestarts"},
				{"metric with two checks", "steps:\n- proxies: 10%\nanalysis:\n  metrics:\n  - name: m\n    successCondition: result[0] < 1\n    http: {url: http://a}\n    prometheus: {address: http://p, query: up}", "exactly one of http and prometheus"},
				{"prometheus without condition", "steps:\n- proxies: 10%\nanalysis:\n  metrics:\n  - name: m\n    prometheus: {address: http://p, query: up}", "needs successCondition or failureCondition"},
				{"http with condition", "steps:\n- proxies: 10%\nanalysis:\n  metrics:\n  - name: m\n    successCondition: result[0] < 1\n    http: {url: http://a}", "apply to prometheus"},
				{"count without interval", "steps:\n- proxies: 10%\nanalysis:\n  metrics:\n  - name: m\n    count: 3\n    http: {url: http://a}", "interval is required"},
				{"credentials in url", "steps:\n- proxies: 10%\nanalysis:\n  metrics:\n  - name: m\n    http: {url: \"http://u:p@a\"}", "spec.rollout.analysis.metrics[0].http.url"},
				{"header value and secret", "steps:\n- proxies: 10%\nanalysis:\n  metrics:\n  - name: m\n    http:\n      url: http://a\n      headers:\n      - {name: X, value: v, valueFrom: {secretKeyRef: {name: s, key: k}}}", "exactly one of value and valueFrom"},
				{"unbounded count", "steps:\n- proxies: 10%\nanalysis:\n  metrics:\n  - name: m\n    interval: 1m\n    count: 1000\n    http: {url: http://a}", "spec.rollout.analysis.metrics[0].count"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					errs := v.validate(object(t, kind, tt.rollout))
					require.NotEmpty(t, errs, "the schema accepted it")
					assert.Contains(t, errs.ToAggregate().Error(), tt.want)
				})
			}
		})
	}
}
