package analysis

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// MaxQueryAnswer bounds a Prometheus answer; a condition reads a handful
// of numbers, and a query that returns megabytes is a mistake to report,
// not to load.
const MaxQueryAnswer = 1 << 20

// placeholders are the names a query may use; Render fills them.
var placeholders = map[string]func(Subject) string{
	"node":     func(s Subject) string { return s.Node },
	"source":   func(s Subject) string { return s.Source },
	"revision": func(s Subject) string { return s.Revision },
	"commit":   func(s Subject) string { return s.Commit },
	"step":     func(s Subject) string { return strconv.Itoa(s.Step) },
}

// RenderQuery replaces the placeholders of q. Each value is escaped for a
// PromQL double-quoted string, where placeholders belong
// (`{node="{{node}}"}`), so a node ID cannot end the string and change
// the query.
func RenderQuery(q string, s Subject) string {
	return placeholder.ReplaceAllStringFunc(q, func(m string) string {
		name := placeholder.FindStringSubmatch(m)[1]
		f, ok := placeholders[name]
		if !ok {
			return m
		}
		return escapePromQL(f(s))
	})
}

func escapePromQL(v string) string {
	var b strings.Builder
	for _, r := range v {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\'':
			b.WriteString(`\'`)
		case '`':
			b.WriteString("\\`")
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

type promMeasurer struct {
	r                *Runner
	check            *PrometheusCheck
	success, failure *Condition
}

// promAnswer is the envelope of Prometheus' HTTP API.
type promAnswer struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

func (p *promMeasurer) measure(ctx context.Context, s Subject) Measurement {
	m := Measurement{StartedAt: p.r.clock.Now()}
	values, secrets, err := p.query(ctx, s, m.StartedAt.Unix())
	if err != nil {
		m.Phase, m.Message = PhaseError, clean(err.Error(), secrets)
		m.FinishedAt = p.r.clock.Now()
		return m
	}
	m.Value = formatValues(values)
	m.Phase, m.Message = p.evaluate(values)
	m.FinishedAt = p.r.clock.Now()
	return m
}

// evaluate follows Argo's EvaluateResult: with both conditions, the
// failure condition wins, and neither holding is Inconclusive; with one,
// its negation is the other outcome. A condition that cannot be evaluated
// (result[1] of a one-sample vector) is an Error.
func (p *promMeasurer) evaluate(values []float64) (Phase, string) {
	var ok, bad bool
	var err error
	if p.success != nil {
		if ok, err = p.success.Eval(values); err != nil {
			return PhaseError, clean("successCondition: "+err.Error(), nil)
		}
	}
	if p.failure != nil {
		if bad, err = p.failure.Eval(values); err != nil {
			return PhaseError, clean("failureCondition: "+err.Error(), nil)
		}
	}
	switch {
	case p.failure == nil:
		bad = !ok
	case p.success == nil:
		ok = !bad
	}
	v := formatValues(values)
	switch {
	case bad && p.failure != nil:
		return PhaseFailed, clean(fmt.Sprintf("result %s meets failureCondition %s", v, p.failure), nil)
	case bad:
		return PhaseFailed, clean(fmt.Sprintf("result %s does not meet successCondition %s", v, p.success), nil)
	case !ok:
		return PhaseInconclusive, clean(fmt.Sprintf("result %s meets neither condition", v), nil)
	}
	return PhaseSuccessful, ""
}

func (p *promMeasurer) query(ctx context.Context, s Subject, at int64) ([]float64, []string, error) {
	timeout := timeoutOr(p.check.Timeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	base, err := url.Parse(p.check.Address)
	if err != nil {
		return nil, nil, fmt.Errorf("prometheus.address does not parse")
	}
	u := base.JoinPath("api", "v1", "query")
	form := url.Values{
		"query": {RenderQuery(p.check.Query, s)},
		// The time is the runner's clock, so that a test's fake clock and
		// the server's data agree; the timeout lets Prometheus give up
		// when legate does.
		"time": {strconv.FormatInt(at, 10)},
		// In float seconds, which Prometheus parses whatever the value
		// ("1.5s" is not a Prometheus duration).
		"timeout": {strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64)},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, nil, fmt.Errorf("POST %s: bad request", redactURL(u))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	secrets, err := p.r.setHeaders(ctx, req, p.check.Headers, "prometheus.headers")
	if err != nil {
		return nil, secrets, err
	}
	status, data, err := p.r.send(req, MaxQueryAnswer, timeout)
	if err != nil {
		return nil, secrets, err
	}
	var a promAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, secrets, fmt.Errorf("POST %s: status %d, answer is not Prometheus' JSON: %s", redactURL(u), status, textboundCut(string(data), 80))
	}
	if a.Status != "success" {
		return nil, secrets, fmt.Errorf("query refused (%s): %s", textboundCut(a.ErrorType, 40), a.Error)
	}
	if status < 200 || status > 299 {
		return nil, secrets, fmt.Errorf("POST %s: status %d", redactURL(u), status)
	}
	values, err := decodeResult(a.Data.ResultType, a.Data.Result)
	return values, secrets, err
}

// decodeResult reads a vector or a scalar as numbers. A matrix (a range
// query) or a string cannot be compared with a threshold and is refused
// with a hint.
func decodeResult(kind string, raw json.RawMessage) ([]float64, error) {
	switch kind {
	case "scalar":
		var pair []json.RawMessage
		if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 {
			return nil, fmt.Errorf("scalar result is not [time, \"value\"]")
		}
		f, err := sampleValue(pair[1])
		if err != nil {
			return nil, err
		}
		return []float64{f}, nil
	case "vector":
		var samples []struct {
			Value []json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(raw, &samples); err != nil {
			return nil, fmt.Errorf("vector result does not decode: %w", err)
		}
		out := make([]float64, 0, len(samples))
		for i, s := range samples {
			if len(s.Value) != 2 {
				return nil, fmt.Errorf("vector sample %d has no [time, \"value\"]", i)
			}
			f, err := sampleValue(s.Value[1])
			if err != nil {
				return nil, fmt.Errorf("vector sample %d: %w", i, err)
			}
			out = append(out, f)
		}
		return out, nil
	}
	return nil, fmt.Errorf("query returned a %s; a condition reads a vector or a scalar (use an instant query, e.g. rate(x[5m]) rather than x[5m])", textboundCut(kind, 20))
}

// sampleValue reads Prometheus' quoted float ("0.5", "NaN", "+Inf").
func sampleValue(raw json.RawMessage) (float64, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf("sample value is not a quoted number")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("sample value %q is not a number", textboundCut(s, 30))
	}
	return f, nil
}

// formatValues writes at most the first 8 values, e.g. "[0.002 NaN]".
func formatValues(vs []float64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, v := range vs {
		if i == 8 {
			fmt.Fprintf(&b, " …%d more", len(vs)-8)
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		switch {
		case math.IsNaN(v):
			b.WriteString("NaN")
		default:
			b.WriteString(strconv.FormatFloat(v, 'g', 6, 64))
		}
	}
	b.WriteByte(']')
	return b.String()
}
