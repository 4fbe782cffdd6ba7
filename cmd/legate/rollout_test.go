package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/rollout"
)

// rolloutAPI answers GET /api/v1/rollouts with its views and takes the
// rollout commands with the admin token only, noting which node got which.
type rolloutAPI struct {
	mu    sync.Mutex
	views []revisions.RolloutView
	calls []string
	fail  map[string]bool
}

func (a *rolloutAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/rollouts", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(a.views)
	})
	mux.HandleFunc("POST /api/v1/nodes/{node}/rollout/{cmd}", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer admin-secret" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"a valid admin bearer token is required"}`))
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		node := r.PathValue("node")
		a.calls = append(a.calls, r.PathValue("cmd")+" "+node)
		if a.fail[node] {
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"error":"node \"` + node + `\": the rollout is over"}`))
			return
		}
		for _, v := range a.views {
			if v.Node == node {
				v.Status.Phase = rollout.PhaseProgressing
				v.Status.Message = r.PathValue("cmd") + "d"
				_ = json.NewEncoder(w).Encode(v)
				return
			}
		}
		w.WriteHeader(http.StatusNotFound)
	})
	mux.ServeHTTP(w, r)
}

func (a *rolloutAPI) took() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.calls
	a.calls = nil
	return out
}

func view(node, source string, phase rollout.Phase) revisions.RolloutView {
	return revisions.RolloutView{
		Node: node, Source: source, Step: "step 3/5 (pause until promoted)", OnCandidate: 2, OnStable: 18, NextGate: "promote",
		Status: rollout.Status{Candidate: "cccccccccccccccc", Stable: "ssssssssssssssss", Step: 2, Steps: 5, Phase: phase, Share: 1000},
	}
}

func TestRolloutCommandsTakeANodeOrASource(t *testing.T) {
	api := &rolloutAPI{views: []revisions.RolloutView{
		view("edge-1", "cfg", rollout.PhasePaused),
		view("edge-2", "cfg", rollout.PhasePaused),
		view("edge-3", "cfg", rollout.PhaseSucceeded),
		view("edge-9", "other", rollout.PhasePaused),
		// A node whose ID is also a source's name: the node wins unless
		// --source says otherwise.
		view("shared", "shared", rollout.PhasePaused),
		view("shared-2", "shared", rollout.PhasePaused),
	}, fail: map[string]bool{}}
	srv := httptest.NewServer(api) // loopback
	t.Cleanup(srv.Close)
	token := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(token, []byte("admin-secret\n"), 0o600))
	run := func(args ...string) (string, error) {
		return runLegate(t, append(args, "--server", srv.URL, "--token-file", token)...)
	}

	out, err := run("rollout", "status", "cfg")
	require.NoError(t, err, out)
	assert.Equal(t, 3, strings.Count(out, "node:      "), out)
	assert.Contains(t, out, "node:      edge-1 (source cfg)")
	assert.Contains(t, out, "waits for: paused: waiting for `legate rollout promote`")

	out, err = run("rollout", "promote", "cfg")
	require.NoError(t, err, out)
	assert.Equal(t, []string{"promote edge-1", "promote edge-2"}, api.took(), "every node of the source under way, not the one that ended")
	assert.Contains(t, out, "node:      edge-1 (source cfg)")
	assert.Contains(t, out, "node:      edge-2 (source cfg)")

	out, err = run("rollout", "abort", "edge-9")
	require.NoError(t, err, out)
	assert.Equal(t, []string{"abort edge-9"}, api.took())

	_, err = run("rollout", "pause", "shared")
	require.NoError(t, err)
	assert.Equal(t, []string{"pause shared"}, api.took(), "a node ID is taken as the node")
	_, err = run("rollout", "pause", "shared", "--source")
	require.NoError(t, err)
	assert.Equal(t, []string{"pause shared", "pause shared-2"}, api.took())

	api.fail["edge-2"] = true
	out, err = run("rollout", "resume", "cfg")
	require.EqualError(t, err, "resume failed on 1 of 2 nodes of source cfg: edge-2")
	assert.Contains(t, out, "node:      edge-1 (source cfg)", "the others are still done and said")
	assert.Contains(t, out, `error:     resume the rollout: node "edge-2": the rollout is over`)
	assert.Equal(t, []string{"resume edge-1", "resume edge-2"}, api.took())

	_, err = run("rollout", "promote", "nothing")
	require.ErrorContains(t, err, `no rollout matches "nothing"`)
	_, err = run("rollout", "status", "nothing")
	require.ErrorContains(t, err, `no rollout matches "nothing"`)
	assert.Empty(t, api.took())

	api.views = []revisions.RolloutView{view("edge-3", "cfg", rollout.PhaseSucceeded)}
	_, err = run("rollout", "promote", "cfg")
	require.EqualError(t, err, `no node of source "cfg" has a rollout under way (legate rollout status cfg shows how they ended)`)
	assert.Empty(t, api.took())

	// Every write carries the admin token; without it nothing is steered.
	api.views = []revisions.RolloutView{view("edge-1", "cfg", rollout.PhasePaused)}
	wrong := filepath.Join(t.TempDir(), "wrong")
	require.NoError(t, os.WriteFile(wrong, []byte("nope"), 0o600))
	out, err = runLegate(t, "rollout", "promote", "cfg", "--server", srv.URL, "--token-file", wrong)
	require.Error(t, err)
	assert.Contains(t, out, "legate serve refused the call without a valid token")
	assert.Empty(t, api.took())
}
