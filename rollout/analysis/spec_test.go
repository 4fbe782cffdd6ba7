package analysis

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func intp(v int) *int { return &v }

func TestSpecFromYAML(t *testing.T) {
	src := `
metrics:
- name: error-rate
  initialDelay: 30s
  interval: 1m
  count: 5
  failureLimit: 1
  successCondition: len(result) == 0 || result[0] < 0.01
  prometheus:
    address: http://prometheus:9090
    query: sum(rate(envoy_http_downstream_rq_xx{node="{{node}}",envoy_response_code_class="5"}[1m]))
- name: smoke
  http:
    url: https://checks.example.com/legate
    timeout: 5s
    headers:
    - name: Authorization
      valueFrom: {file: /etc/legate/check-token}
`
	var s Spec
	require.NoError(t, yaml.UnmarshalStrict([]byte(src), &s))
	require.NoError(t, s.Validate("rollout.analysis"))
	assert.Equal(t, 30*time.Second, s.Metrics[0].InitialDelay.Duration)
	assert.Equal(t, 5, s.Metrics[0].Count)
	assert.Equal(t, 5*time.Second, s.Metrics[1].HTTP.Timeout.Duration)
}

func TestSpecValidateNamesTheField(t *testing.T) {
	prom := func() Metric {
		return Metric{
			Name: "m", SuccessCondition: "result[0] < 1",
			Prometheus: &PrometheusCheck{Address: "http://p:9090", Query: "up"},
		}
	}
	tests := []struct {
		name string
		edit func(*Spec)
		err  string
	}{
		{"no metrics", func(s *Spec) { s.Metrics = nil }, "a.metrics: at least one metric"},
		{"bad name", func(s *Spec) { s.Metrics[0].Name = "Bad Name" }, `a.metrics[0].name: "Bad Name"`},
		{"duplicate name", func(s *Spec) { s.Metrics = append(s.Metrics, s.Metrics[0]) }, `a.metrics[1].name: "m" is used`},
		{"both checks", func(s *Spec) { s.Metrics[0].HTTP = &HTTPCheck{URL: "http://x"} }, "a.metrics[0]: exactly one of http and prometheus"},
		{"no check", func(s *Spec) { s.Metrics[0].Prometheus = nil }, "a.metrics[0]: exactly one of http and prometheus"},
		{"count too high", func(s *Spec) { s.Metrics[0].Count = MaxCount + 1 }, "a.metrics[0].count"},
		{"count without interval", func(s *Spec) { s.Metrics[0].Count = 3 }, "a.metrics[0].interval: required when count"},
		{"too long", func(s *Spec) {
			s.Metrics[0].Count, s.Metrics[0].Interval = MaxCount, Duration{time.Hour}
		}, "a.metrics[0]: initialDelay + (count-1) × interval"},
		{"negative limit", func(s *Spec) { s.Metrics[0].FailureLimit = intp(-2) }, "a.metrics[0].failureLimit: -2"},
		{"bad condition", func(s *Spec) { s.Metrics[0].SuccessCondition = "result[0] <" }, "a.metrics[0].successCondition: offset"},
		{"no condition", func(s *Spec) { s.Metrics[0].SuccessCondition = "" }, "needs successCondition or failureCondition"},
		{"unknown placeholder", func(s *Spec) { s.Metrics[0].Prometheus.Query = `up{x="{{nod}}"}` }, "a.metrics[0].prometheus.query: unknown placeholder {{nod}}"},
		{"relative address", func(s *Spec) { s.Metrics[0].Prometheus.Address = "/prom" }, "a.metrics[0].prometheus.address: want an absolute"},
		{"credentials in URL", func(s *Spec) { s.Metrics[0].Prometheus.Address = "http://u:hunter2@p" }, "credentials in the URL are refused"},
		{"timeout", func(s *Spec) { s.Metrics[0].Prometheus.Timeout = Duration{time.Hour} }, "a.metrics[0].prometheus.timeout"},
		{"http with condition", func(s *Spec) {
			s.Metrics[0].Prometheus, s.Metrics[0].HTTP = nil, &HTTPCheck{URL: "http://x"}
		}, "successCondition and failureCondition apply to prometheus"},
		{"header name", func(s *Spec) {
			s.Metrics[0].Prometheus.Headers = []Header{{Name: "Bad Header", Value: "x"}}
		}, "a.metrics[0].prometheus.headers[0].name"},
		{"header newline", func(s *Spec) {
			s.Metrics[0].Prometheus.Headers = []Header{{Name: "X", Value: "a\nb"}}
		}, "a.metrics[0].prometheus.headers[0].value: want one line"},
		{"header both sources", func(s *Spec) {
			s.Metrics[0].Prometheus.Headers = []Header{{Name: "X", ValueFrom: &ValueSource{File: "f", SecretKeyRef: &SecretKeyRef{Name: "s", Key: "k"}}}}
		}, "a.metrics[0].prometheus.headers[0].valueFrom: exactly one of file and secretKeyRef"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Spec{Metrics: []Metric{prom()}}
			require.NoError(t, s.Validate("a"))
			tt.edit(&s)
			err := s.Validate("a")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.err)
			assert.NotContains(t, err.Error(), "hunter2")
		})
	}
}

func TestDurationJSON(t *testing.T) {
	var d Duration
	require.NoError(t, d.UnmarshalJSON([]byte(`"1m30s"`)))
	assert.Equal(t, 90*time.Second, d.Duration)
	assert.Error(t, d.UnmarshalJSON([]byte(`"soon"`)))
	assert.Error(t, d.UnmarshalJSON([]byte(`30`)))
	b, err := d.MarshalJSON()
	require.NoError(t, err)
	assert.JSONEq(t, `"1m30s"`, string(b))
}
