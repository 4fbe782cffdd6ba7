package core

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/rollout/analysis"
)

func TestAnalysisSpecNamesTheField(t *testing.T) {
	spec, err := AnalysisSpec(nil, "sources[0].rollout.analysis")
	require.NoError(t, err)
	assert.Nil(t, spec, "no analysis, no spec")

	_, err = AnalysisSpec(json.RawMessage(`{"metrics":[{"name":"ok","failureLimt":1}]}`), "sources[0].rollout.analysis")
	require.Error(t, err)
	assert.ErrorContains(t, err, "sources[0].rollout.analysis")
	assert.ErrorContains(t, err, "failureLimt", "a misspelt field is named")

	_, err = AnalysisSpec(json.RawMessage(`{"metrics":[]}`), "sources[2].rollout.analysis")
	assert.ErrorContains(t, err, "sources[2].rollout.analysis.metrics")
}

// The verdict of a real HTTP check reaches the rollout, and an analysis
// that cannot measure (the check answers garbage) fails the step as it
// aborts an Argo rollout.
func TestAnalysesJudgeThroughTheRunner(t *testing.T) {
	answer := `{"result":"pass"}`
	var got analysis.Subject
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&got)
		_, _ = w.Write([]byte(answer))
	}))
	defer srv.Close()
	spec, err := AnalysisSpec(json.RawMessage(`{"metrics":[{"name":"smoke","consecutiveErrorLimit":0,"http":{"url":"`+srv.URL+`"}}]}`), "analysis")
	require.NoError(t, err)
	a := Analyses{Specs: map[string]*analysis.Spec{"edge": spec}, Runner: analysis.NewRunner(analysis.Options{})}
	subject := rollout.Subject{Node: "edge-1", Source: "edge", Revision: "abc", Commit: "c0ffee", Step: 2, Steps: 5}

	v, _, err := a.Analyze(context.Background(), subject)
	require.NoError(t, err)
	assert.Equal(t, rollout.VerdictPass, v)
	assert.Equal(t, analysis.Subject{Node: "edge-1", Source: "edge", Revision: "abc", Commit: "c0ffee", Step: 2, Steps: 5}, got, "the check is told what it judges")

	answer = `{"result":"fail","message":"error rate 7%"}`
	v, msg, err := a.Analyze(context.Background(), subject)
	require.NoError(t, err)
	assert.Equal(t, rollout.VerdictFail, v)
	assert.Contains(t, msg, "error rate 7%")

	answer = `{"result": broken`
	v, _, err = a.Analyze(context.Background(), subject)
	require.NoError(t, err)
	assert.Equal(t, rollout.VerdictFail, v, "an analysis that errors fails the step")

	v, _, err = a.Analyze(context.Background(), rollout.Subject{Source: "other"})
	require.NoError(t, err)
	assert.Equal(t, rollout.VerdictPass, v, "a source without analysis passes")
}
