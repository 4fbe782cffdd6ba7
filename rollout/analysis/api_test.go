package analysis_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/rollout/analysis"
)

// The Kubernetes API mirrors Spec field for field, so the controller turns
// spec.rollout.analysis into a Spec through JSON. This test fails when a
// field is renamed on one side only.
func TestAPIAnalysisIsASpec(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	api := v1alpha1.RolloutAnalysis{Metrics: []v1alpha1.AnalysisMetric{
		{
			Name:                  "error-rate",
			InitialDelay:          &metav1.Duration{Duration: 30 * time.Second},
			Interval:              &metav1.Duration{Duration: time.Minute},
			Count:                 i32(5),
			FailureLimit:          i32(1),
			InconclusiveLimit:     i32(2),
			ConsecutiveErrorLimit: i32(3),
			SuccessCondition:      "result[0] < 0.01",
			FailureCondition:      "result[0] > 0.1",
			Prometheus: &v1alpha1.PrometheusAnalysis{
				Address: "http://prometheus:9090", Query: `up{node="{{node}}"}`,
				Timeout: &metav1.Duration{Duration: 5 * time.Second},
				Headers: []v1alpha1.AnalysisHeader{{Name: "X-Scope-OrgID", Value: "team-a"}},
			},
		},
		{
			Name: "smoke",
			HTTP: &v1alpha1.HTTPAnalysis{
				URL: "https://checks.example.com/legate",
				Headers: []v1alpha1.AnalysisHeader{{Name: "Authorization", ValueFrom: &v1alpha1.AnalysisHeaderSource{
					SecretKeyRef: v1alpha1.AnalysisSecretKeyRef{Name: "check", Key: "token"},
				}}},
			},
		},
	}}
	data, err := json.Marshal(api)
	require.NoError(t, err)
	var spec analysis.Spec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&spec))
	require.NoError(t, spec.Validate("spec.rollout.analysis"))

	m := spec.Metrics[0]
	assert.Equal(t, 30*time.Second, m.InitialDelay.Duration)
	assert.Equal(t, time.Minute, m.Interval.Duration)
	assert.Equal(t, 5, m.Count)
	assert.Equal(t, 1, *m.FailureLimit)
	assert.Equal(t, 2, *m.InconclusiveLimit)
	assert.Equal(t, 3, *m.ConsecutiveErrorLimit)
	assert.Equal(t, "result[0] > 0.1", m.FailureCondition)
	assert.Equal(t, 5*time.Second, m.Prometheus.Timeout.Duration)
	assert.Equal(t, analysis.Header{Name: "X-Scope-OrgID", Value: "team-a"}, m.Prometheus.Headers[0])
	assert.Equal(t, &analysis.SecretKeyRef{Name: "check", Key: "token"}, spec.Metrics[1].HTTP.Headers[0].ValueFrom.SecretKeyRef)
}

// The sample's analysis is one the runner accepts: its conditions parse
// and its placeholders exist.
func TestSampleAnalysisValidates(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "envoyconfig-rollout.yaml"))
	require.NoError(t, err)
	var obj v1alpha1.EnvoyConfig
	require.NoError(t, yaml.UnmarshalStrict(data, &obj))
	require.NotNil(t, obj.Spec.Rollout)
	raw, err := json.Marshal(obj.Spec.Rollout.Analysis)
	require.NoError(t, err)
	var spec analysis.Spec
	require.NoError(t, json.Unmarshal(raw, &spec))
	assert.NoError(t, spec.Validate("spec.rollout.analysis"))
	assert.Len(t, spec.Metrics, 2)
}
