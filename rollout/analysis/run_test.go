package analysis

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"
)

var subject = Subject{Node: "edge-1", Revision: "r-abc", Commit: "0123456789abcdef0123456789abcdef01234567", Step: 2}

// checker is an HTTP check endpoint that answers a script of bodies (the
// last one repeats) and records when, by the fake clock, each request came.
type checker struct {
	t     *testing.T
	clock *clocktesting.FakeClock
	mu    sync.Mutex
	times []time.Time
	got   []httpRequest
	auth  []string
	// answer returns the status and body of the n-th request.
	answer func(n int, r *http.Request) (int, string)
}

func (c *checker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req httpRequest
	assert.NoError(c.t, json.NewDecoder(r.Body).Decode(&req))
	c.mu.Lock()
	n := len(c.times)
	c.times = append(c.times, c.clock.Now())
	c.got = append(c.got, req)
	c.auth = append(c.auth, r.Header.Get("Authorization"))
	c.mu.Unlock()
	status, body := c.answer(n, r)
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

func (c *checker) requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.times)
}

func script(bodies ...string) func(int, *http.Request) (int, string) {
	return func(n int, _ *http.Request) (int, string) {
		if n >= len(bodies) {
			n = len(bodies) - 1
		}
		return http.StatusOK, bodies[n]
	}
}

const (
	pass         = `{"result":"pass"}`
	fail         = `{"result":"fail","message":"p99 latency 900ms"}`
	inconclusive = `{"result":"inconclusive","message":"not enough traffic"}`
)

func newChecker(t *testing.T, fc *clocktesting.FakeClock, answer func(int, *http.Request) (int, string)) (*checker, string) {
	c := &checker{t: t, clock: fc, answer: answer}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return c, srv.URL
}

// run runs the analysis while moving the fake clock a second at a time
// whenever the runner waits on it, so schedules are exact and no test
// sleeps.
func run(t *testing.T, r *Runner, fc *clocktesting.FakeClock, spec Spec) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan Result, 1)
	go func() { done <- r.Run(ctx, spec, subject) }()
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

func httpMetric(url string) Metric {
	return Metric{Name: "smoke", HTTP: &HTTPCheck{URL: url, Timeout: Duration{2 * time.Second}}}
}

func start() *clocktesting.FakeClock {
	return clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

func TestRunPassesAfterCountOnSchedule(t *testing.T) {
	fc := start()
	c, url := newChecker(t, fc, script(pass))
	m := httpMetric(url)
	m.InitialDelay, m.Interval, m.Count = Duration{5 * time.Second}, Duration{10 * time.Second}, 3
	res := run(t, NewRunner(Options{Clock: fc}), fc, Spec{Metrics: []Metric{m}})

	assert.Equal(t, PhaseSuccessful, res.Phase, res.Message)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	assert.Equal(t, []time.Time{t0.Add(5 * time.Second), t0.Add(15 * time.Second), t0.Add(25 * time.Second)}, c.times)
	require.Len(t, res.Metrics, 1)
	assert.Equal(t, 3, res.Metrics[0].Successful)
	assert.Len(t, res.Metrics[0].Measurements, 3)
	assert.Equal(t, httpRequest{Subject: subject, Metric: "smoke"}, c.got[0])
}

func TestRunFailsPastFailureLimit(t *testing.T) {
	fc := start()
	c, url := newChecker(t, fc, script(fail, pass, fail, pass))
	m := httpMetric(url)
	m.Interval, m.Count, m.FailureLimit = Duration{time.Minute}, 5, intp(1)
	res := run(t, NewRunner(Options{Clock: fc}), fc, Spec{Metrics: []Metric{m}})

	assert.Equal(t, PhaseFailed, res.Phase)
	assert.Equal(t, 3, c.requests(), "the run stops at the failure past the limit")
	assert.Equal(t, `metric "smoke" failed: 2 of 3 measurements failed (failureLimit 1); last: p99 latency 900ms`, res.Message)
}

func TestRunFailureLimitTolerates(t *testing.T) {
	fc := start()
	_, url := newChecker(t, fc, script(fail, pass, pass))
	m := httpMetric(url)
	m.Interval, m.Count, m.FailureLimit = Duration{time.Minute}, 3, intp(1)
	res := run(t, NewRunner(Options{Clock: fc}), fc, Spec{Metrics: []Metric{m}})
	assert.Equal(t, PhaseSuccessful, res.Phase, res.Message)
	assert.Equal(t, 1, res.Metrics[0].Failed)
}

func TestRunInconclusivePastLimit(t *testing.T) {
	fc := start()
	c, url := newChecker(t, fc, script(inconclusive))
	m := httpMetric(url)
	m.Interval, m.Count, m.InconclusiveLimit = Duration{time.Minute}, 5, intp(1)
	res := run(t, NewRunner(Options{Clock: fc}), fc, Spec{Metrics: []Metric{m}})
	assert.Equal(t, PhaseInconclusive, res.Phase)
	assert.Equal(t, 2, c.requests())
	assert.Contains(t, res.Message, "not enough traffic")
}

func TestRunErrorsInARow(t *testing.T) {
	fc := start()
	// Errors that are interrupted by an answer start counting again.
	c, url := newChecker(t, fc, func(n int, _ *http.Request) (int, string) {
		if n == 1 {
			return http.StatusOK, pass
		}
		return http.StatusServiceUnavailable, "overloaded"
	})
	m := httpMetric(url)
	m.Interval, m.Count, m.ConsecutiveErrorLimit = Duration{time.Minute}, 10, intp(2)
	res := run(t, NewRunner(Options{Clock: fc}), fc, Spec{Metrics: []Metric{m}})
	assert.Equal(t, PhaseError, res.Phase)
	assert.Equal(t, 5, c.requests(), "error, pass, then three errors in a row pass the limit of 2")
	assert.Contains(t, res.Message, `metric "smoke" could not be measured 3 times in a row (consecutiveErrorLimit 2)`)
	assert.Contains(t, res.Message, "status 503: overloaded")
}

func TestRunStopsAtFirstBadMetric(t *testing.T) {
	fc := start()
	good, gurl := newChecker(t, fc, script(pass))
	_, burl := newChecker(t, fc, script(fail))
	g := httpMetric(gurl)
	g.Interval, g.Count = Duration{time.Minute}, 10
	b := httpMetric(burl)
	b.Name, b.InitialDelay = "canary-errors", Duration{90 * time.Second}
	res := run(t, NewRunner(Options{Clock: fc}), fc, Spec{Metrics: []Metric{g, b}})
	assert.Equal(t, PhaseFailed, res.Phase)
	assert.Contains(t, res.Message, `metric "canary-errors" failed`)
	assert.Equal(t, 2, good.requests(), "the other metric stops too")
}

func TestRunStopsWithContext(t *testing.T) {
	fc := start()
	_, url := newChecker(t, fc, script(pass))
	m := httpMetric(url)
	m.Interval, m.Count = Duration{time.Minute}, 3
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result, 1)
	go func() { done <- NewRunner(Options{Clock: fc}).Run(ctx, Spec{Metrics: []Metric{m}}, subject) }()
	require.Eventually(t, fc.HasWaiters, 10*time.Second, time.Millisecond)
	cancel()
	select {
	case res := <-done:
		assert.Equal(t, PhaseError, res.Phase)
		assert.Equal(t, "analysis stopped before it ended", res.Message)
	case <-time.After(10 * time.Second):
		require.FailNow(t, "Run did not return after its context ended")
	}
}

func TestRunRefusesAnInvalidSpec(t *testing.T) {
	res := NewRunner(Options{}).Run(context.Background(), Spec{}, subject)
	assert.Equal(t, PhaseError, res.Phase)
	assert.Contains(t, res.Message, "analysis.metrics: at least one metric")
}

func TestHTTPAnswers(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		phase  Phase
		msg    string
	}{
		{"pass", 200, pass, PhaseSuccessful, ""},
		{"fail with message", 200, fail, PhaseFailed, "p99 latency 900ms"},
		{"upper case", 200, `{"result":"FAIL"}`, PhaseFailed, ""},
		{"inconclusive", 200, inconclusive, PhaseInconclusive, "not enough traffic"},
		{"empty 204 is a pass", 204, "", PhaseSuccessful, "status 204"},
		{"plain text 200 is a pass", 200, "OK", PhaseSuccessful, "status 200"},
		{"unknown result", 200, `{"result":"maybe"}`, PhaseError, `answer's result is "maybe"`},
		{"JSON without result", 200, `{"status":"UP"}`, PhaseError, `the JSON answer has no "result"`},
		{"broken JSON", 200, `{"result":`, PhaseError, "answer is not the JSON of the contract"},
		{"server error", 500, `{"result":"pass"}`, PhaseError, "status 500"},
		{"not found", 404, "no such page", PhaseError, "status 404: no such page"},
		{"control characters", 200, "{\"result\":\"fail\",\"message\":\"a\\u001b[31m\\nb\"}", PhaseFailed, "a [31m b"},
		{"long message", 200, `{"result":"fail","message":"` + strings.Repeat("x", 5000) + `"}`, PhaseFailed, strings.Repeat("x", MaxMessage-len("…")) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := start()
			_, url := newChecker(t, fc, func(int, *http.Request) (int, string) { return tt.status, tt.body })
			h := &httpMeasurer{r: NewRunner(Options{Clock: fc}), metric: "m", check: &HTTPCheck{URL: url}}
			got := h.measure(context.Background(), subject)
			assert.Equal(t, tt.phase, got.Phase, got.Message)
			if tt.msg != "" {
				assert.Contains(t, got.Message, tt.msg)
			}
			assert.LessOrEqual(t, len(got.Message), MaxMessage)
		})
	}
}

func TestHTTPOversizedAnswer(t *testing.T) {
	fc := start()
	_, url := newChecker(t, fc, func(int, *http.Request) (int, string) {
		return 200, `{"result":"pass","message":"` + strings.Repeat("a", MaxAnswer) + `"}`
	})
	h := &httpMeasurer{r: NewRunner(Options{Clock: fc}), metric: "m", check: &HTTPCheck{URL: url}}
	got := h.measure(context.Background(), subject)
	assert.Equal(t, PhaseError, got.Phase)
	assert.Contains(t, got.Message, "answer larger than 64 KiB")
}

func TestHTTPServerDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	h := &httpMeasurer{r: NewRunner(Options{}), metric: "m", check: &HTTPCheck{URL: url + "/check?token=hunter2"}}
	got := h.measure(context.Background(), subject)
	assert.Equal(t, PhaseError, got.Phase)
	assert.Contains(t, got.Message, "POST "+url+"/check:")
	assert.NotContains(t, got.Message, "hunter2", "the query string may hold a token")
}

func TestHTTPTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Answers only when the client gives up; the body is read first so
		// that the server notices the client closing the connection.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	h := &httpMeasurer{r: NewRunner(Options{}), metric: "m", check: &HTTPCheck{URL: srv.URL, Timeout: Duration{50 * time.Millisecond}}}
	got := h.measure(context.Background(), subject)
	assert.Equal(t, PhaseError, got.Phase)
	assert.Contains(t, got.Message, "no answer within 50ms")
}

func TestHTTPRedirectToAnotherHostRefused(t *testing.T) {
	var hit sync.Mutex
	reached := false
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hit.Lock()
		reached = true
		hit.Unlock()
		_, _ = w.Write([]byte(pass))
	}))
	t.Cleanup(other.Close)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			_, _ = w.Write([]byte(pass))
			return
		}
		if r.URL.Path == "/same" {
			http.Redirect(w, r, "/moved", http.StatusTemporaryRedirect)
			return
		}
		http.Redirect(w, r, other.URL, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	r := NewRunner(Options{})
	got := (&httpMeasurer{r: r, metric: "m", check: &HTTPCheck{URL: srv.URL + "/same"}}).measure(context.Background(), subject)
	assert.Equal(t, PhaseSuccessful, got.Phase, "a redirect on the same host is followed: %s", got.Message)

	got = (&httpMeasurer{r: r, metric: "m", check: &HTTPCheck{URL: srv.URL, Headers: []Header{{Name: "X-Token", Value: "t"}}}}).measure(context.Background(), subject)
	assert.Equal(t, PhaseError, got.Phase)
	assert.Contains(t, got.Message, "redirect to another host")
	hit.Lock()
	defer hit.Unlock()
	assert.False(t, reached, "the other host must not be asked")
}

type mapSecrets map[string]string

func (m mapSecrets) Resolve(_ context.Context, src ValueSource) (string, error) {
	v, ok := m[src.SecretKeyRef.Name+"/"+src.SecretKeyRef.Key]
	if !ok {
		return "", context.Canceled
	}
	return v, nil
}

func TestHTTPSecretHeaderNeverEchoed(t *testing.T) {
	const token = "Bearer s3cr3t-t0ken"
	fc := start()
	c, url := newChecker(t, fc, func(n int, r *http.Request) (int, string) {
		// A careless checker that echoes what it got.
		if n == 0 {
			return 200, `{"result":"fail","message":"denied for ` + r.Header.Get("Authorization") + `"}`
		}
		return 401, "bad credentials " + r.Header.Get("Authorization")
	})
	check := &HTTPCheck{URL: url, Headers: []Header{{Name: "Authorization", ValueFrom: &ValueSource{SecretKeyRef: &SecretKeyRef{Name: "check", Key: "token"}}}}}
	h := &httpMeasurer{r: NewRunner(Options{Clock: fc, Secrets: mapSecrets{"check/token": token + "\n"}}), metric: "m", check: check}
	for range 2 {
		got := h.measure(context.Background(), subject)
		assert.Contains(t, got.Message, "[redacted]")
		assert.NotContains(t, got.Message, "s3cr3t")
	}
	assert.Equal(t, token, c.auth[0], "the header is sent, without the file's newline")

	// Without a resolver a valueFrom header is an error naming the field.
	h = &httpMeasurer{r: NewRunner(Options{Clock: fc}), metric: "m", check: check}
	got := h.measure(context.Background(), subject)
	assert.Equal(t, PhaseError, got.Phase)
	assert.Equal(t, "http.headers[0].valueFrom: no secrets are available here", got.Message)
}

// BenchmarkHTTPMeasurement is one HTTP check over loopback: request,
// answer, decoding and cleaning.
func BenchmarkHTTPMeasurement(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write([]byte(fail))
	}))
	b.Cleanup(srv.Close)
	h := &httpMeasurer{r: NewRunner(Options{}), metric: "m", check: &HTTPCheck{URL: srv.URL}}
	b.ReportAllocs()
	for b.Loop() {
		if m := h.measure(context.Background(), subject); m.Phase != PhaseFailed {
			b.Fatal(m.Phase, m.Message)
		}
	}
}
