package standalone

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/serveconfig"
)

// podsAround returns a pod name whose bucket is in a share of share basis
// points and one whose bucket is not, so that the test's split does not
// hang on the hash's luck.
func podsAround(t *testing.T, share int) (in, out string) {
	t.Helper()
	for i := 0; i < 1000 && (in == "" || out == ""); i++ {
		pod := fmt.Sprintf("edge-pod-%d", i)
		if rollout.InShare(rollout.ProxyBucket("", pod, "edge", ""), share) {
			in = cmp.Or(in, pod)
		} else {
			out = cmp.Or(out, pod)
		}
	}
	require.NotEmpty(t, in)
	require.NotEmpty(t, out)
	return in, out
}

// startUntilStopped runs s and returns a stop that ends it and checks it
// ended cleanly: a restart within one test.
func startUntilStopped(t *testing.T, s *Server) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("legate serve did not stop")
		}
	}
	t.Cleanup(stop)
	require.Eventually(t, s.Ready, 30*time.Second, 10*time.Millisecond)
	return stop
}

// TestRolloutContinuesAfterARestartOfLegateServe pauses a rollout at its
// second step (an untimed pause, the candidate on half the proxies), stops
// legate serve and starts it again on the same state directory: the
// rollout is at the same step with the same split (the same proxy on the
// candidate, under the same version), and promote carries it to the end.
func TestRolloutContinuesAfterARestartOfLegateServe(t *testing.T) {
	repo := newLocalRepo(t)
	write := func(name string) {
		require.NoError(t, os.WriteFile(filepath.Join(repo.dir, "cluster.yaml"), []byte(strings.ReplaceAll(clusterDoc, "%s", name)), 0o600))
		repo.git("add", "-A")
		repo.git("commit", "-qm", "cluster "+name)
	}
	write("a")
	var policy rollout.Policy
	require.NoError(t, yaml.UnmarshalStrict([]byte("steps: [{proxies: 50%}, {pause: {}}, {proxies: 100%}]\nackTimeout: 1m"), &policy))
	stateDir := t.TempDir()
	cfg := serveconfig.Config{
		StateDir: stateDir, DefaultNode: "edge",
		Sources: []serveconfig.SourceConfig{{Name: "config", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}, Rollout: &policy}},
	}
	const wait, tick = 30 * time.Second, 10 * time.Millisecond
	inPod, outPod := podsAround(t, 5000)

	s := newServer(t, cfg, Options{})
	stop := startUntilStopped(t, s)
	require.Eventually(t, func() bool { return len(s.Nodes()) == 1 }, wait, tick)
	in, out := startProxy(t, s.XDSAddr(), "edge", inPod, "nothing"), startProxy(t, s.XDSAddr(), "edge", outPod, "nothing")
	state := func(s *Server) revisions.State { v, _ := s.view(t, "edge"); return v.State }
	require.Eventually(t, func() bool {
		a, _ := in.last()
		b, _ := out.last()
		v, _ := s.view(t, "edge")
		return a != "" && a == b && v.State == revisions.StateInSync && v.Answers.Accepted == 2
	}, wait, tick)
	stable, _ := out.last()

	write("b")
	require.True(t, s.Trigger("config"))
	paused := func(s *Server) func() bool {
		return func() bool {
			v, ok := s.engine.Rollout("edge")
			return ok && v.Status.Phase == rollout.PhasePaused && v.Status.Step == 1
		}
	}
	require.Eventually(t, paused(s), wait, tick, "the canary ACKs and the rollout waits at its pause")
	candidate, _ := in.last()
	require.NotEqual(t, stable, candidate, "the canary has the candidate")
	got, _ := out.last()
	require.Equal(t, stable, got, "the other proxy is still on the stable revision")
	before, _ := s.engine.Rollout("edge")
	checkRolloutPage(t, s)

	stop()

	s2 := newServer(t, cfg, Options{})
	startUntilStopped(t, s2)
	require.Eventually(t, paused(s2), wait, tick, "the restarted server is at the same step")
	after, _ := s2.engine.Rollout("edge")
	assert.Equal(t, before.Status.Candidate, after.Status.Candidate)
	assert.Equal(t, before.Status.Share, after.Status.Share, "the same split")
	assert.True(t, before.Status.Started.Equal(after.Status.Started), "the same rollout, not a new one")
	in2, out2 := startProxy(t, s2.XDSAddr(), "edge", inPod, "nothing"), startProxy(t, s2.XDSAddr(), "edge", outPod, "nothing")
	// A restarted server publishes again under a new generation: the
	// version's revision part ("<hash12>-<generation>") says which side.
	rev := func(p *testProxy) string { v, _ := p.last(); h, _, _ := strings.Cut(v, "-"); return h }
	revOf := func(v string) string { h, _, _ := strings.Cut(v, "-"); return h }
	require.Eventually(t, func() bool { return rev(in2) == revOf(candidate) }, wait, tick, "the canary gets the candidate again")
	require.Eventually(t, func() bool { return rev(out2) == revOf(stable) }, wait, tick, "the other proxy gets the stable revision")
	require.Eventually(t, func() bool { v, _ := s2.engine.Rollout("edge"); return v.OnCandidate == 1 && v.OnStable == 1 }, wait, tick)

	code, body := post(t, s2, "/api/v1/nodes/edge/rollout/promote")
	require.Equal(t, http.StatusOK, code, body)
	require.Eventually(t, func() bool {
		v, _ := s2.engine.Rollout("edge")
		return v.Status.Phase == rollout.PhaseSucceeded
	}, wait, tick, "promote carries the rollout through its last step")
	require.Eventually(t, func() bool { return rev(out2) == revOf(candidate) && rev(in2) == revOf(candidate) }, wait, tick, "every proxy has the candidate")
	require.Eventually(t, func() bool { return state(s2) == revisions.StateInSync }, wait, tick)
}

// checkRolloutPage loads the status page of s in headless Chromium, when
// it is installed, and checks that the rollout fits 1280 and 390 px.
func checkRolloutPage(t *testing.T, s *Server) {
	t.Helper()
	resp, err := http.Get("http://" + s.HTTPAddr() + "/")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	assert.Contains(t, string(body), `data-rollout="edge"`)
	assert.Contains(t, string(body), "paused: waiting for `legate rollout promote`")
	if _, err := exec.LookPath("chromium"); err != nil && os.Getenv("LEGATE_REQUIRE_TOOLS") != "1" {
		return
	}
	findBrowser(t).check(s, view{
		name:   "rollout",
		wanted: []string{`[data-rollout="edge"] .badge`, `[data-rollout="edge"] .wait`, `[data-rollout="edge"] .side`, `[data-node="edge"] .rollout`},
		first:  []string{"#rollouts", `[data-rollout="edge"] .step`},
	})
}
