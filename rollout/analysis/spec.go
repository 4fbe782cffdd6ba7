package analysis

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Bounds on a spec. They keep one analysis finite in time and memory
// whatever a user writes; they are generous for real rollouts (a step
// judged for an hour, every 30 s).
const (
	MaxMetrics      = 10
	MaxCount        = 120
	MaxHeaders      = 16
	MaxInterval     = time.Hour
	MaxInitialDelay = time.Hour
	MaxTimeout      = 5 * time.Minute
	MaxQueryLen     = 4096
	MaxConditionLen = 512
	// MaxDuration bounds one metric's whole schedule:
	// initialDelay + (count-1)*interval.
	MaxDuration = 6 * time.Hour

	DefaultTimeout               = 10 * time.Second
	DefaultConsecutiveErrorLimit = 4
)

// Spec is the analysis of one rollout: every metric is measured on its own
// schedule, and the worst metric decides (Failed over Error over
// Inconclusive over Successful), as in an Argo Rollouts AnalysisRun.
type Spec struct {
	// Metrics to measure; at least one.
	Metrics []Metric `json:"metrics" yaml:"metrics"`
}

// Metric is one check repeated on a schedule. Exactly one of HTTP and
// Prometheus is set.
type Metric struct {
	// Name identifies the metric in statuses and messages.
	Name string `json:"name" yaml:"name"`
	// InitialDelay waits before the first measurement, e.g. to let the
	// canaries take traffic before their error rate means anything.
	InitialDelay Duration `json:"initialDelay,omitempty" yaml:"initialDelay,omitempty"`
	// Interval between two measurements; required when Count > 1.
	Interval Duration `json:"interval,omitempty" yaml:"interval,omitempty"`
	// Count is how many measurements are taken; 1 by default. Unlike Argo
	// an unbounded count is refused: a gate must end.
	Count int `json:"count,omitempty" yaml:"count,omitempty"`
	// FailureLimit is how many failed measurements are tolerated: the
	// metric fails when more than FailureLimit measurements failed. 0 by
	// default (the first failure fails the metric); -1 tolerates any.
	FailureLimit *int `json:"failureLimit,omitempty" yaml:"failureLimit,omitempty"`
	// InconclusiveLimit is the same for inconclusive measurements; the
	// metric is Inconclusive (the rollout pauses for a person) past it.
	InconclusiveLimit *int `json:"inconclusiveLimit,omitempty" yaml:"inconclusiveLimit,omitempty"`
	// ConsecutiveErrorLimit is how many measurements in a row may fail to
	// be taken (server down, bad answer, timeout) before the metric is in
	// Error; 4 by default, as in Argo.
	ConsecutiveErrorLimit *int `json:"consecutiveErrorLimit,omitempty" yaml:"consecutiveErrorLimit,omitempty"`
	// SuccessCondition and FailureCondition are expressions over the
	// Prometheus result (see condition.go); they are not used by HTTP
	// checks, whose answer says pass or fail itself.
	SuccessCondition string `json:"successCondition,omitempty" yaml:"successCondition,omitempty"`
	FailureCondition string `json:"failureCondition,omitempty" yaml:"failureCondition,omitempty"`

	HTTP       *HTTPCheck       `json:"http,omitempty" yaml:"http,omitempty"`
	Prometheus *PrometheusCheck `json:"prometheus,omitempty" yaml:"prometheus,omitempty"`
}

// HTTPCheck POSTs the subject to URL and reads a verdict (see http.go for
// the contract).
type HTTPCheck struct {
	URL string `json:"url" yaml:"url"`
	// Timeout of one request; 10s by default.
	Timeout Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	Headers []Header `json:"headers,omitempty" yaml:"headers,omitempty"`
}

// PrometheusCheck runs an instant query against Prometheus' HTTP API.
type PrometheusCheck struct {
	// Address is the server's base URL, e.g. http://prometheus:9090.
	Address string `json:"address" yaml:"address"`
	// Query is PromQL with {{node}}, {{source}}, {{revision}}, {{commit}}
	// and {{step}} replaced, escaped for a PromQL string literal.
	Query   string   `json:"query" yaml:"query"`
	Timeout Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	Headers []Header `json:"headers,omitempty" yaml:"headers,omitempty"`
}

// Header is sent with every request of a check. A value that is a
// credential comes from ValueFrom and is never logged nor echoed.
type Header struct {
	Name      string       `json:"name" yaml:"name"`
	Value     string       `json:"value,omitempty" yaml:"value,omitempty"`
	ValueFrom *ValueSource `json:"valueFrom,omitempty" yaml:"valueFrom,omitempty"`
}

// ValueSource says where a secret header value is read; the home's
// SecretResolver decides which kinds it serves (standalone: files; the
// Kubernetes home: Secrets of the object's own namespace).
type ValueSource struct {
	// File is a path on the standalone server.
	File string `json:"file,omitempty" yaml:"file,omitempty"`
	// SecretKeyRef names a key of a Secret in the object's namespace.
	SecretKeyRef *SecretKeyRef `json:"secretKeyRef,omitempty" yaml:"secretKeyRef,omitempty"`
}

// SecretKeyRef is one key of a Kubernetes Secret.
type SecretKeyRef struct {
	Name string `json:"name" yaml:"name"`
	Key  string `json:"key" yaml:"key"`
}

// Duration is a time.Duration written "30s", as metav1.Duration is, so
// that the Kubernetes API types convert to a Spec through JSON.
type Duration struct{ time.Duration }

// UnmarshalJSON reads "1m30s"-style strings.
func (d *Duration) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		d.Duration = 0
		return nil
	}
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return fmt.Errorf("duration %s: want a string such as \"30s\"", textboundCut(s, 40))
	}
	s = s[1 : len(s)-1]
	if s == "" {
		d.Duration = 0
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", textboundCut(s, 40), err)
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return []byte(`"` + d.String() + `"`), nil }

var (
	metricName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9_.]{0,61}[a-z0-9])?$`)
	headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
	// placeholder matches what Render replaces; anything else between
	// double braces is a typo that Validate names.
	placeholder = regexp.MustCompile(`\{\{\s*([^{}]*?)\s*\}\}`)
)

// Validate checks a spec, naming the field path of every error under
// prefix (e.g. "sources[0].rollout.analysis"). All errors are returned,
// joined, so a user fixes them in one go.
func (s *Spec) Validate(prefix string) error {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	if len(s.Metrics) == 0 {
		bad(prefix+".metrics", "at least one metric is required")
	}
	if len(s.Metrics) > MaxMetrics {
		bad(prefix+".metrics", "%d metrics, at most %d", len(s.Metrics), MaxMetrics)
	}
	seen := map[string]bool{}
	for i := range s.Metrics {
		if i >= MaxMetrics {
			break
		}
		m := &s.Metrics[i]
		p := fmt.Sprintf("%s.metrics[%d]", prefix, i)
		if !metricName.MatchString(m.Name) {
			bad(p+".name", "%q: want lower-case letters, digits, '-', '_' or '.', at most 63", textboundCut(m.Name, 70))
		} else if seen[m.Name] {
			bad(p+".name", "%q is used by another metric", m.Name)
		}
		seen[m.Name] = true
		m.validateSchedule(p, bad)
		switch {
		case (m.HTTP == nil) == (m.Prometheus == nil):
			bad(p, "exactly one of http and prometheus must be set")
		case m.HTTP != nil:
			if m.SuccessCondition != "" || m.FailureCondition != "" {
				bad(p, "successCondition and failureCondition apply to prometheus; an http check answers pass, fail or inconclusive itself")
			}
			validateURL(p+".http.url", m.HTTP.URL, bad)
			validateTimeout(p+".http.timeout", m.HTTP.Timeout, bad)
			validateHeaders(p+".http.headers", m.HTTP.Headers, bad)
		default:
			validateURL(p+".prometheus.address", m.Prometheus.Address, bad)
			validateTimeout(p+".prometheus.timeout", m.Prometheus.Timeout, bad)
			validateHeaders(p+".prometheus.headers", m.Prometheus.Headers, bad)
			validateQuery(p+".prometheus.query", m.Prometheus.Query, bad)
			if m.SuccessCondition == "" && m.FailureCondition == "" {
				bad(p, "a prometheus check needs successCondition or failureCondition")
			}
			for _, c := range []struct{ field, expr string }{
				{"successCondition", m.SuccessCondition}, {"failureCondition", m.FailureCondition},
			} {
				if c.expr == "" {
					continue
				}
				if len(c.expr) > MaxConditionLen {
					bad(p+"."+c.field, "%d bytes, at most %d", len(c.expr), MaxConditionLen)
					continue
				}
				if _, err := ParseCondition(c.expr); err != nil {
					bad(p+"."+c.field, "%v", err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

func (m *Metric) validateSchedule(p string, bad func(string, string, ...any)) {
	count := m.effectiveCount()
	if m.Count < 0 || m.Count > MaxCount {
		bad(p+".count", "%d: want 1 to %d", m.Count, MaxCount)
	}
	if m.Interval.Duration < 0 || m.Interval.Duration > MaxInterval {
		bad(p+".interval", "%s: want 0 to %s", m.Interval.Duration, MaxInterval)
	}
	if count > 1 && m.Interval.Duration <= 0 {
		bad(p+".interval", "required when count is more than 1")
	}
	if m.InitialDelay.Duration < 0 || m.InitialDelay.Duration > MaxInitialDelay {
		bad(p+".initialDelay", "%s: want 0 to %s", m.InitialDelay.Duration, MaxInitialDelay)
	}
	if count >= 1 && count <= MaxCount && m.Interval.Duration <= MaxInterval {
		total := m.InitialDelay.Duration + time.Duration(count-1)*m.Interval.Duration
		if total > MaxDuration {
			bad(p, "initialDelay + (count-1) × interval is %s, at most %s", total, MaxDuration)
		}
	}
	for _, l := range []struct {
		field string
		v     *int
	}{{"failureLimit", m.FailureLimit}, {"inconclusiveLimit", m.InconclusiveLimit}, {"consecutiveErrorLimit", m.ConsecutiveErrorLimit}} {
		if l.v != nil && (*l.v < -1 || *l.v > MaxCount) {
			bad(p+"."+l.field, "%d: want -1 (no limit) to %d", *l.v, MaxCount)
		}
	}
}

func validateURL(path, raw string, bad func(string, string, ...any)) {
	if raw == "" {
		bad(path, "required")
		return
	}
	if len(raw) > 2048 {
		bad(path, "%d bytes, at most 2048", len(raw))
		return
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The URL is not echoed: it may carry credentials.
		bad(path, "want an absolute http:// or https:// URL")
		return
	}
	if u.User != nil {
		bad(path, "credentials in the URL are refused; send them in a header with valueFrom")
	}
}

func validateTimeout(path string, d Duration, bad func(string, string, ...any)) {
	if d.Duration < 0 || d.Duration > MaxTimeout {
		bad(path, "%s: want 0 (default %s) to %s", d.Duration, DefaultTimeout, MaxTimeout)
	}
}

func validateHeaders(path string, hs []Header, bad func(string, string, ...any)) {
	if len(hs) > MaxHeaders {
		bad(path, "%d headers, at most %d", len(hs), MaxHeaders)
		return
	}
	for i, h := range hs {
		p := fmt.Sprintf("%s[%d]", path, i)
		if !headerName.MatchString(h.Name) {
			bad(p+".name", "%q is not a header name", textboundCut(h.Name, 70))
		}
		if h.ValueFrom == nil {
			if strings.ContainsAny(h.Value, "\r\n\x00") || len(h.Value) > 4096 {
				bad(p+".value", "want one line of at most 4096 bytes")
			}
			continue
		}
		if h.Value != "" {
			bad(p, "value and valueFrom are exclusive")
		}
		vf := h.ValueFrom
		if (vf.File == "") == (vf.SecretKeyRef == nil) {
			bad(p+".valueFrom", "exactly one of file and secretKeyRef must be set")
		}
		if r := vf.SecretKeyRef; r != nil && (r.Name == "" || r.Key == "") {
			bad(p+".valueFrom.secretKeyRef", "name and key are required")
		}
	}
}

func validateQuery(path, q string, bad func(string, string, ...any)) {
	if strings.TrimSpace(q) == "" {
		bad(path, "required")
		return
	}
	if len(q) > MaxQueryLen {
		bad(path, "%d bytes, at most %d", len(q), MaxQueryLen)
		return
	}
	for _, m := range placeholder.FindAllStringSubmatch(q, -1) {
		if _, ok := placeholders[m[1]]; !ok {
			bad(path, "unknown placeholder {{%s}}: want {{node}}, {{source}}, {{revision}}, {{commit}} or {{step}}", textboundCut(m[1], 40))
		}
	}
}

func (m *Metric) effectiveCount() int {
	if m.Count == 0 {
		return 1
	}
	return m.Count
}

func limit(v *int, def int) int {
	if v == nil {
		return def
	}
	return *v
}

func timeoutOr(d Duration) time.Duration {
	if d.Duration <= 0 {
		return DefaultTimeout
	}
	return d.Duration
}
