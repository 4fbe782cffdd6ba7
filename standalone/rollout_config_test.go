package standalone

import (
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
	plans, err := cfg.rolloutPlans()
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
