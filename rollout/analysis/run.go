package analysis

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
)

// Phase is the verdict of a measurement, a metric or a whole analysis,
// named as in Argo Rollouts.
type Phase string

const (
	// PhaseSuccessful: the check passed.
	PhaseSuccessful Phase = "Successful"
	// PhaseFailed: the check says the revision is bad; the rollout applies
	// its onFailure.
	PhaseFailed Phase = "Failed"
	// PhaseInconclusive: the check cannot tell; the rollout pauses for a
	// person to promote or abort.
	PhaseInconclusive Phase = "Inconclusive"
	// PhaseError: the check could not be taken (server down, bad answer,
	// timeout) more times in a row than consecutiveErrorLimit. The rollout
	// treats it as a failure: nobody vouched for the revision.
	PhaseError Phase = "Error"
)

// Subject is what is being judged: one node's new revision at one step.
// It is sent to HTTP checks and fills a Prometheus query's placeholders.
type Subject struct {
	Node string `json:"node"`
	// Source is the source that owns the node, when there is one.
	Source   string `json:"source,omitempty"`
	Revision string `json:"revision"`
	Commit   string `json:"commit"`
	// Step is the 1-based index of the rollout step being judged, of
	// Steps.
	Step  int `json:"step"`
	Steps int `json:"steps,omitempty"`
}

// Measurement is one check's answer.
type Measurement struct {
	Phase Phase `json:"phase"`
	// Value is what was measured, e.g. "[0.002]" for a query or "pass".
	Value      string    `json:"value,omitempty"`
	Message    string    `json:"message,omitempty"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt"`
}

// MetricResult sums up one metric's measurements.
type MetricResult struct {
	Name             string        `json:"name"`
	Phase            Phase         `json:"phase,omitempty"`
	Message          string        `json:"message,omitempty"`
	Count            int           `json:"count"`
	Successful       int           `json:"successful"`
	Failed           int           `json:"failed"`
	Inconclusive     int           `json:"inconclusive"`
	Error            int           `json:"error"`
	ConsecutiveError int           `json:"consecutiveError"`
	Measurements     []Measurement `json:"measurements,omitempty"`
}

// Result is the verdict of one analysis.
type Result struct {
	Phase Phase `json:"phase"`
	// Message says which metric decided and why, for a status.
	Message string         `json:"message"`
	Metrics []MetricResult `json:"metrics,omitempty"`
}

// SecretResolver returns the value of a header's valueFrom. A home
// supplies one that serves only what its tenants may read; it may be
// called from any goroutine that calls Run.
type SecretResolver interface {
	Resolve(ctx context.Context, src ValueSource) (string, error)
}

// Options configure a Runner; the zero value works (real clock, no secret
// headers, the default transport).
type Options struct {
	Clock   clock.Clock
	Secrets SecretResolver
	// Transport carries every request; tests and TLS setups supply one.
	Transport http.RoundTripper
	Log       logr.Logger
}

// Runner runs analyses. It holds no state between runs and Run may be
// called concurrently.
type Runner struct {
	clock   clock.Clock
	secrets SecretResolver
	client  *http.Client
	log     logr.Logger
}

// NewRunner returns a Runner.
func NewRunner(o Options) *Runner {
	r := &Runner{clock: o.Clock, secrets: o.Secrets, log: o.Log}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	r.client = newClient(o.Transport)
	return r
}

// measurer takes one measurement of one metric.
type measurer interface {
	measure(ctx context.Context, s Subject) Measurement
}

// Run measures every metric of spec on its schedule and returns when all
// are done, as soon as one is Failed, Inconclusive or in Error (as an Argo
// AnalysisRun stops at its first failed metric), or when ctx ends (Phase
// Error, "stopped"). An invalid spec is an Error result naming the field;
// callers validate at load time, so this is a second line.
func (r *Runner) Run(ctx context.Context, spec Spec, s Subject) Result {
	if err := spec.Validate("analysis"); err != nil {
		return Result{Phase: PhaseError, Message: textboundCut(err.Error(), MaxMessage)}
	}
	type state struct {
		m    *Metric
		do   measurer
		next time.Time
		done bool
	}
	start := r.clock.Now()
	states := make([]*state, len(spec.Metrics))
	results := make([]MetricResult, len(spec.Metrics))
	for i := range spec.Metrics {
		m := &spec.Metrics[i]
		do, err := r.measurerFor(m)
		if err != nil {
			return Result{Phase: PhaseError, Message: textboundCut(fmt.Sprintf("analysis.metrics[%d]: %v", i, err), MaxMessage)}
		}
		states[i] = &state{m: m, do: do, next: start.Add(m.InitialDelay.Duration)}
		results[i] = MetricResult{Name: m.Name, Measurements: make([]Measurement, 0, m.effectiveCount())}
	}
	log := r.log.WithValues("node", s.Node, "revision", s.Revision, "commit", s.Commit, "step", s.Step)
	for {
		// The metric due first is measured next; metrics are measured one
		// at a time so that one Run is one goroutine.
		var cur *state
		idx := -1
		for i, st := range states {
			if !st.done && (cur == nil || st.next.Before(cur.next)) {
				cur, idx = st, i
			}
		}
		if cur == nil {
			break
		}
		if wait := cur.next.Sub(r.clock.Now()); wait > 0 {
			t := r.clock.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return stopped(results)
			case <-t.C():
			}
		}
		if ctx.Err() != nil {
			return stopped(results)
		}
		meas := cur.do.measure(ctx, s)
		if ctx.Err() != nil {
			return stopped(results)
		}
		res := &results[idx]
		res.add(meas)
		log.V(1).Info("analysis measurement", "metric", cur.m.Name, "phase", meas.Phase, "value", meas.Value)
		if p := assess(cur.m, res); p != "" {
			cur.done = true
			res.Phase = p
			res.Message = metricMessage(cur.m, res)
			if p != PhaseSuccessful {
				log.Info("analysis ended", "metric", cur.m.Name, "phase", p)
				return Result{Phase: p, Message: res.Message, Metrics: results}
			}
			continue
		}
		cur.next = meas.FinishedAt.Add(cur.m.Interval.Duration)
	}
	return Result{
		Phase:   PhaseSuccessful,
		Message: fmt.Sprintf("%d of %d metrics passed", len(results), len(results)),
		Metrics: results,
	}
}

func stopped(results []MetricResult) Result {
	return Result{Phase: PhaseError, Message: "analysis stopped before it ended", Metrics: results}
}

func (r *Runner) measurerFor(m *Metric) (measurer, error) {
	if m.HTTP != nil {
		return &httpMeasurer{r: r, metric: m.Name, check: m.HTTP}, nil
	}
	pm := &promMeasurer{r: r, check: m.Prometheus}
	var err error
	if m.SuccessCondition != "" {
		if pm.success, err = ParseCondition(m.SuccessCondition); err != nil {
			return nil, fmt.Errorf("successCondition: %w", err)
		}
	}
	if m.FailureCondition != "" {
		if pm.failure, err = ParseCondition(m.FailureCondition); err != nil {
			return nil, fmt.Errorf("failureCondition: %w", err)
		}
	}
	return pm, nil
}

func (res *MetricResult) add(m Measurement) {
	res.Count++
	// Counts are kept whole; the list is bounded by the metric's count,
	// itself at most MaxCount.
	res.Measurements = append(res.Measurements, m)
	if m.Phase == PhaseError {
		res.Error++
		res.ConsecutiveError++
		return
	}
	res.ConsecutiveError = 0
	switch m.Phase {
	case PhaseSuccessful:
		res.Successful++
	case PhaseFailed:
		res.Failed++
	case PhaseInconclusive:
		res.Inconclusive++
	}
}

// assess is Argo Rollouts' assessMetricStatus without the unbounded
// count: failures past failureLimit fail the metric, then inconclusive
// answers past inconclusiveLimit, then errors in a row past
// consecutiveErrorLimit; once count measurements are taken the metric is
// Successful. "" means keep measuring.
func assess(m *Metric, r *MetricResult) Phase {
	if l := limit(m.FailureLimit, 0); l >= 0 && r.Failed > l {
		return PhaseFailed
	}
	if l := limit(m.InconclusiveLimit, 0); l >= 0 && r.Inconclusive > l {
		return PhaseInconclusive
	}
	if l := limit(m.ConsecutiveErrorLimit, DefaultConsecutiveErrorLimit); l >= 0 && r.ConsecutiveError > l {
		return PhaseError
	}
	if r.Count >= m.effectiveCount() {
		return PhaseSuccessful
	}
	return ""
}

func metricMessage(m *Metric, r *MetricResult) string {
	last := ""
	if n := len(r.Measurements); n > 0 && r.Measurements[n-1].Message != "" {
		last = "; last: " + r.Measurements[n-1].Message
	}
	var head string
	switch r.Phase {
	case PhaseFailed:
		head = fmt.Sprintf("metric %q failed: %d of %d measurements failed (failureLimit %d)", m.Name, r.Failed, r.Count, limit(m.FailureLimit, 0))
	case PhaseInconclusive:
		head = fmt.Sprintf("metric %q inconclusive: %d of %d measurements inconclusive (inconclusiveLimit %d)", m.Name, r.Inconclusive, r.Count, limit(m.InconclusiveLimit, 0))
	case PhaseError:
		head = fmt.Sprintf("metric %q could not be measured %d times in a row (consecutiveErrorLimit %d)", m.Name, r.ConsecutiveError, limit(m.ConsecutiveErrorLimit, DefaultConsecutiveErrorLimit))
	default:
		head = fmt.Sprintf("metric %q passed: %d of %d measurements successful", m.Name, r.Successful, r.Count)
		last = ""
	}
	return textboundCut(head+last, 2*MaxMessage)
}
