package serveconfig

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/rollout"
)

func TestRolloutInTheConfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "legate.yaml")
	require.NoError(t, os.WriteFile(p, []byte(`
sources:
- name: edge
  git: {url: /r}
  rollout:
    steps:
      - proxies: 10%
      - pause: 30s
      - nodes: ["edge-canary-*"]
      - proxies: 50%
      - pause: {}
    onFailure: rollback
- name: plain
  git: {url: /s}
`), 0o600))
	cfg, err := LoadConfig(p)
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	plans, err := cfg.RolloutPlans()
	require.NoError(t, err)
	require.Contains(t, plans, "edge")
	assert.NotContains(t, plans, "plain", "a source without a policy publishes at once")
	assert.Len(t, plans["edge"].Steps, 5)
	assert.Equal(t, rollout.StepNodes, plans["edge"].Steps[2].Kind)
}

func TestRolloutConfigErrorsNameTheField(t *testing.T) {
	p := filepath.Join(t.TempDir(), "legate.yaml")
	require.NoError(t, os.WriteFile(p, []byte(`
sources:
- name: edge
  git: {url: /r}
  rollout:
    steps: [{proxies: 10%}, {pause: 1s}, {proxies: 110%}]
    onFailure: retry
`), 0o600))
	cfg, err := LoadConfig(p)
	require.NoError(t, err)
	err = cfg.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `sources[0].rollout.steps[2].proxies: "110%" is not a percentage between 0 and 100`)
	assert.Contains(t, err.Error(), `sources[0].rollout.onFailure: "retry" is neither "rollback" nor "pause"`)
}

// The analysis of a policy is checked with the rest of the config, its
// errors naming the field, and the analyzer built from it runs the
// source's own check: a failing HTTP check fails the step.
func TestRolloutAnalysisFromTheConfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "legate.yaml")
	require.NoError(t, os.WriteFile(p, []byte(`
sources:
- name: edge
  git: {url: /r}
  rollout:
    steps: [{proxies: 10%}]
    analysis:
      metrics:
        - name: errors
          failureLimt: 1
          http: {url: "http://127.0.0.1:1/check"}
`), 0o600))
	cfg, err := LoadConfig(p)
	require.NoError(t, err)
	err = cfg.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "sources[0].rollout.analysis")
	assert.Contains(t, err.Error(), "failureLimt")

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"result":"fail","message":"5xx rate 9%"}`))
	}))
	defer srv.Close()
	require.NoError(t, os.WriteFile(p, []byte(`
sources:
- name: edge
  git: {url: /r}
  rollout:
    steps: [{proxies: 10%}]
    analysis:
      metrics:
        - name: errors
          http: {url: "`+srv.URL+`"}
`), 0o600))
	cfg, err = LoadConfig(p)
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	plans, err := cfg.RolloutPlans()
	require.NoError(t, err)
	a, err := cfg.Analyses(plans)
	require.NoError(t, err)
	v, msg, err := a.Analyze(context.Background(), rollout.Subject{Node: "edge-1", Source: "edge", Revision: "r2", Step: 1, Steps: 1})
	require.NoError(t, err)
	assert.Equal(t, rollout.VerdictFail, v)
	assert.Contains(t, msg, "5xx rate 9%")
}
