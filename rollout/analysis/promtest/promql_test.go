package promtest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/legate-dev/legate/rollout/analysis"
)

// series is ten minutes of an Envoy fleet, one sample a minute from the
// epoch (promqltest's origin): edge-good answers 1 % errors, edge-bad
// answers 1 % until minute 3 and 20 % after it (a rate over [2m] reads
// 1 % at minute 3, 11.5 % at minute 4 as its window straddles the change,
// 20 % from minute 5), edge-mid stays at 5 %.
const series = `
load 1m
  envoy_rq_total{node="edge-good",revision="r1"} 0+100x10
  envoy_rq_5xx{node="edge-good",revision="r1"}   0+1x10
  envoy_rq_total{node="edge-bad",revision="r2"}  0+100x10
  envoy_rq_5xx{node="edge-bad",revision="r2"}    0+1x3 23+20x6
  envoy_rq_total{node="edge-mid",revision="r3"}  0+100x10
  envoy_rq_5xx{node="edge-mid",revision="r3"}    0+5x10
`

const errorRate = `sum(rate(envoy_rq_5xx{node="{{node}}",revision="{{revision}}"}[2m])) / sum(rate(envoy_rq_total{node="{{node}}",revision="{{revision}}"}[2m]))`

// server answers /api/v1/query like Prometheus' HTTP API: the form's
// query and time go to the real engine, the result is written with the
// engine's own JSON encoding of vectors and scalars, and errors use the
// API's envelope and status codes.
func server(t *testing.T) string {
	t.Helper()
	st := promqltest.LoadedStorage(t, series)
	t.Cleanup(func() { _ = st.Close() })
	ng := promqltest.NewTestEngine(t, false, 5*time.Minute, promqltest.DefaultMaxSamplesPerQuery)
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/query", func(w http.ResponseWriter, r *http.Request) {
		answer := func(status int, body any) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			assert.NoError(t, json.NewEncoder(w).Encode(body))
		}
		fail := func(status int, kind string, err error) {
			answer(status, map[string]string{"status": "error", "errorType": kind, "error": err.Error()})
		}
		if err := r.ParseForm(); err != nil {
			fail(http.StatusBadRequest, "bad_data", err)
			return
		}
		at, err := strconv.ParseFloat(r.Form.Get("time"), 64)
		if err != nil {
			fail(http.StatusBadRequest, "bad_data", err)
			return
		}
		q, err := ng.NewInstantQuery(r.Context(), storage.Queryable(st), nil, r.Form.Get("query"), time.Unix(0, int64(at*1e9)))
		if err != nil {
			fail(http.StatusBadRequest, "bad_data", err)
			return
		}
		defer q.Close()
		res := q.Exec(r.Context())
		if res.Err != nil {
			fail(http.StatusUnprocessableEntity, "execution", res.Err)
			return
		}
		answer(http.StatusOK, map[string]any{
			"status": "success",
			"data":   map[string]any{"resultType": res.Value.Type(), "result": res.Value},
		})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// run runs an analysis from minute 3 of the series, moving the fake clock
// a second at a time while the runner waits on it.
func run(t *testing.T, spec analysis.Spec, s analysis.Subject) analysis.Result {
	t.Helper()
	fc := clocktesting.NewFakeClock(time.Unix(0, 0).Add(3 * time.Minute))
	r := analysis.NewRunner(analysis.Options{Clock: fc})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan analysis.Result, 1)
	go func() { done <- r.Run(ctx, spec, s) }()
	for {
		select {
		case res := <-done:
			return res
		case <-ctx.Done():
			require.FailNow(t, "the analysis did not end")
		default:
		}
		if fc.HasWaiters() {
			fc.Step(time.Second)
		} else {
			runtime.Gosched() // let the runner reach its next wait
		}
	}
}

func intp(v int) *int { return &v }

func values(res analysis.Result) []string {
	var out []string
	for _, m := range res.Metrics[0].Measurements {
		out = append(out, m.Value)
	}
	return out
}

func metric(addr, query string) analysis.Metric {
	return analysis.Metric{
		Name:             "error-rate",
		SuccessCondition: "result[0] < 0.02",
		Prometheus:       &analysis.PrometheusCheck{Address: addr, Query: query},
	}
}

func TestErrorRatePasses(t *testing.T) {
	m := metric(server(t), errorRate)
	m.Interval, m.Count = analysis.Duration{Duration: time.Minute}, 3
	res := run(t, analysis.Spec{Metrics: []analysis.Metric{m}}, analysis.Subject{Node: "edge-good", Revision: "r1", Step: 1})
	require.Equal(t, analysis.PhaseSuccessful, res.Phase, res.Message)
	assert.Equal(t, []string{"[0.01]", "[0.01]", "[0.01]"}, values(res))
}

func TestErrorRateFailsAtFailureLimit(t *testing.T) {
	m := metric(server(t), errorRate)
	m.Interval, m.Count, m.FailureLimit = analysis.Duration{Duration: time.Minute}, 5, intp(1)
	res := run(t, analysis.Spec{Metrics: []analysis.Metric{m}}, analysis.Subject{Node: "edge-bad", Revision: "r2", Step: 1})
	require.Equal(t, analysis.PhaseFailed, res.Phase, res.Message)
	assert.Equal(t, 3, res.Metrics[0].Count, "a pass at minute 3, then the second failure passes failureLimit 1")
	assert.Equal(t, []string{"[0.01]", "[0.115]", "[0.2]"}, values(res))
	assert.Contains(t, res.Message, "does not meet successCondition result[0] < 0.02")
}

func TestBetweenConditionsIsInconclusive(t *testing.T) {
	m := metric(server(t), errorRate)
	m.FailureCondition = "result[0] >= 0.1"
	res := run(t, analysis.Spec{Metrics: []analysis.Metric{m}}, analysis.Subject{Node: "edge-mid", Revision: "r3"})
	require.Equal(t, analysis.PhaseInconclusive, res.Phase, res.Message)
	assert.Equal(t, "[0.05]", res.Metrics[0].Measurements[0].Value)
	assert.Contains(t, res.Message, "meets neither condition")
}

func TestEmptyVector(t *testing.T) {
	addr := server(t)
	query := `envoy_rq_total{node="{{node}}"}`
	m := metric(addr, query)
	m.SuccessCondition = "len(result) == 0 || result[0] > 0"
	res := run(t, analysis.Spec{Metrics: []analysis.Metric{m}}, analysis.Subject{Node: "edge-unknown"})
	assert.Equal(t, analysis.PhaseSuccessful, res.Phase, res.Message)

	// Indexing an empty result is an error, as in Argo, retried up to
	// consecutiveErrorLimit.
	m = metric(addr, query)
	m.Interval, m.Count, m.ConsecutiveErrorLimit = analysis.Duration{Duration: time.Minute}, 5, intp(1)
	res = run(t, analysis.Spec{Metrics: []analysis.Metric{m}}, analysis.Subject{Node: "edge-unknown"})
	assert.Equal(t, analysis.PhaseError, res.Phase)
	assert.Contains(t, res.Message, "result[0]: the result has 0 values")
}

func TestScalarAndVectorOfMany(t *testing.T) {
	addr := server(t)
	m := metric(addr, `scalar(sum(envoy_rq_total))`)
	m.SuccessCondition = "result == 900"
	res := run(t, analysis.Spec{Metrics: []analysis.Metric{m}}, analysis.Subject{})
	assert.Equal(t, analysis.PhaseSuccessful, res.Phase, res.Message)

	m = metric(addr, `sum by (node) (rate(envoy_rq_5xx[2m])) / sum by (node) (rate(envoy_rq_total[2m]))`)
	m.SuccessCondition = "all(result, # < 0.1)"
	m.InitialDelay = analysis.Duration{Duration: time.Minute}
	res = run(t, analysis.Spec{Metrics: []analysis.Metric{m}}, analysis.Subject{})
	assert.Equal(t, analysis.PhaseFailed, res.Phase, "edge-bad is at 20 %%: %s", res.Message)
	assert.Len(t, res.Metrics[0].Measurements, 1)
}

func TestQueryErrors(t *testing.T) {
	addr := server(t)
	tests := []struct{ query, msg string }{
		{`sum(rate(envoy_rq_total[2m]`, "query refused (bad_data)"},
		{`envoy_rq_total[5m]`, "query returned a matrix"},
		{`"text"`, "query returned a string"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			m := metric(addr, tt.query)
			m.ConsecutiveErrorLimit = intp(0)
			res := run(t, analysis.Spec{Metrics: []analysis.Metric{m}}, analysis.Subject{})
			assert.Equal(t, analysis.PhaseError, res.Phase)
			assert.Contains(t, res.Message, tt.msg)
		})
	}
}

// TestPlaceholderCannotChangeTheQuery gives a node ID that would close
// the label matcher and add a series of its own if it were pasted
// unescaped: the engine must see it as one label value that matches
// nothing.
func TestPlaceholderCannotChangeTheQuery(t *testing.T) {
	m := metric(server(t), `count(envoy_rq_total{node="{{node}}"}) or vector(0)`)
	m.SuccessCondition = "result[0] == 0"
	res := run(t, analysis.Spec{Metrics: []analysis.Metric{m}}, analysis.Subject{Node: `x"} or vector(7) or up{a="`})
	assert.Equal(t, analysis.PhaseSuccessful, res.Phase, res.Message)
	assert.Equal(t, "[0]", res.Metrics[0].Measurements[0].Value)
}

func TestServerDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close()
	m := metric(addr, "up")
	m.ConsecutiveErrorLimit = intp(0)
	res := run(t, analysis.Spec{Metrics: []analysis.Metric{m}}, analysis.Subject{})
	assert.Equal(t, analysis.PhaseError, res.Phase)
	assert.Contains(t, res.Message, "POST "+addr+"/api/v1/query")
}
