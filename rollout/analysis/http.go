package analysis

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// MaxAnswer bounds an HTTP check's answer body: a verdict and a message
// fit in far less, and a larger body is a misconfigured URL.
const MaxAnswer = 64 << 10

// maxRedirects is how many same-host redirects a check follows.
const maxRedirects = 3

// newClient builds the client every check uses. It follows a redirect only
// to the same scheme and host: a check's headers may carry a token, and a
// redirect must not carry it (or the subject) somewhere the user did not
// write down.
func newClient(rt http.RoundTripper) *http.Client {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &http.Client{
		Transport: rt,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("more than %d redirects", maxRedirects)
			}
			first := via[0].URL
			if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
				return fmt.Errorf("redirect to another host (%s) refused", redactURL(req.URL))
			}
			return nil
		},
	}
}

// The HTTP check's contract, documented in docs/rollout.md.
//
// Request: POST url, Content-Type application/json,
//
//	{"node": "...", "revision": "...", "commit": "...", "step": 2, "metric": "smoke"}
//
// Answer: a 2xx status with a JSON object
//
//	{"result": "pass" | "fail" | "inconclusive", "message": "..."}
//
// Fallback: a 2xx answer whose body is empty or not a JSON object is a
// pass, so that a plain health endpoint works as a check. Any other status
// is an error (the check could not be taken), which counts toward
// consecutiveErrorLimit rather than failing the rollout at once: a
// flapping checker must not roll back a good revision, but one that stays
// down does stop it.
type httpAnswer struct {
	Result  string `json:"result"`
	Message string `json:"message"`
}

type httpRequest struct {
	Subject
	Metric string `json:"metric"`
}

type httpMeasurer struct {
	r      *Runner
	metric string
	check  *HTTPCheck
}

func (h *httpMeasurer) measure(ctx context.Context, s Subject) Measurement {
	m := Measurement{StartedAt: h.r.clock.Now()}
	m.Phase, m.Value, m.Message = h.do(ctx, s)
	m.FinishedAt = h.r.clock.Now()
	return m
}

func (h *httpMeasurer) do(ctx context.Context, s Subject) (Phase, string, string) {
	timeout := timeoutOr(h.check.Timeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u, err := url.Parse(h.check.URL)
	if err != nil {
		return PhaseError, "", "http.url does not parse"
	}
	body, _ := json.Marshal(httpRequest{Subject: s, Metric: h.metric}) // plain strings and an int: cannot fail
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return PhaseError, "", fmt.Sprintf("POST %s: %s", redactURL(u), "bad request")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	secrets, err := h.r.setHeaders(ctx, req, h.check.Headers, "http.headers")
	if err != nil {
		return PhaseError, "", err.Error()
	}
	status, data, err := h.r.send(req, MaxAnswer, timeout)
	if err != nil {
		return PhaseError, "", clean(err.Error(), secrets)
	}
	if status < 200 || status > 299 {
		return PhaseError, "", clean(fmt.Sprintf("POST %s: status %d: %s", redactURL(u), status, data), secrets)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return PhaseSuccessful, "pass", fmt.Sprintf("status %d", status)
	}
	var a httpAnswer
	if err := json.Unmarshal(trimmed, &a); err != nil {
		return PhaseError, "", clean(fmt.Sprintf("POST %s: answer is not the JSON of the contract: %v", redactURL(u), err), secrets)
	}
	msg := clean(a.Message, secrets)
	switch strings.ToLower(a.Result) {
	case "pass":
		return PhaseSuccessful, "pass", msg
	case "fail":
		return PhaseFailed, "fail", msg
	case "inconclusive":
		return PhaseInconclusive, "inconclusive", msg
	}
	if a.Result == "" {
		return PhaseError, "", clean(fmt.Sprintf(`POST %s: the JSON answer has no "result"; want pass, fail or inconclusive`, redactURL(u)), secrets)
	}
	return PhaseError, "", clean(fmt.Sprintf("POST %s: answer's result is %q, want pass, fail or inconclusive", redactURL(u), textboundCut(a.Result, 40)), secrets)
}

// setHeaders sets a check's headers and returns the secret values, which
// every message is cleaned of.
func (r *Runner) setHeaders(ctx context.Context, req *http.Request, hs []Header, field string) ([]string, error) {
	var secrets []string
	for i, h := range hs {
		v := h.Value
		if h.ValueFrom != nil {
			if r.secrets == nil {
				return secrets, fmt.Errorf("%s[%d].valueFrom: no secrets are available here", field, i)
			}
			var err error
			v, err = r.secrets.Resolve(ctx, *h.ValueFrom)
			if err != nil {
				// The resolver's error names the file or Secret, never
				// its content.
				return secrets, fmt.Errorf("%s[%d].valueFrom: %w", field, i, err)
			}
			v = strings.TrimRight(v, "\r\n")
			if strings.ContainsAny(v, "\r\n\x00") {
				return secrets, fmt.Errorf("%s[%d].valueFrom: the value is not one line", field, i)
			}
			secrets = append(secrets, v)
		}
		req.Header.Set(h.Name, v)
	}
	return secrets, nil
}

// send does the request and reads at most limit bytes of the answer; a
// longer one is an error. The error names the endpoint without its query.
func (r *Runner) send(req *http.Request, limit int64, timeout time.Duration) (int, []byte, error) {
	where := req.Method + " " + redactURL(req.URL)
	resp, err := r.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return 0, nil, fmt.Errorf("%s: no answer within %s", where, timeout)
		}
		return 0, nil, fmt.Errorf("%s: %w", where, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return 0, nil, fmt.Errorf("%s: answer not read within %s", where, timeout)
		}
		return 0, nil, fmt.Errorf("%s: reading the answer: %w", where, err)
	}
	if int64(len(data)) > limit {
		return 0, nil, fmt.Errorf("%s: answer larger than %d KiB", where, limit>>10)
	}
	return resp.StatusCode, data, nil
}
