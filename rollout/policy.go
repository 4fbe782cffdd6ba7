package rollout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
	"time"
)

// Policy is a rollout policy as a person writes it, in the standalone
// config (per source) and in spec.rollout of the Kubernetes API, with the
// same field names:
//
//	rollout:
//	  steps:
//	    - proxies: 10%
//	    - pause: 30s
//	    - nodes: ["edge-canary-*"]   # or "25%" of the source's nodes
//	    - proxies: 50%
//	    - pause: {}                  # wait for `legate rollout promote`
//	  ackTimeout: 30s
//	  soak: 1m
//	  maxRestarts: 2
//	  analysis: {...}                # rollout/analysis decodes it
//	  onFailure: rollback            # or pause
//
// The fields keep what was written; Compile checks them and returns the
// Plan the engine runs, with errors naming the field path. Decode with
// sigs.k8s.io/yaml (JSON tags) or encoding/json.
type Policy struct {
	Steps []Step `json:"steps,omitempty" yaml:"steps,omitempty"`
	// AckTimeout bounds how long the proxies of a step may take to ACK the
	// candidate (default DefaultAckTimeout).
	AckTimeout Duration `json:"ackTimeout,omitzero" yaml:"ackTimeout,omitempty"`
	// Soak is how long a proxies or nodes step is watched, once its
	// proxies ACKed, for NACKs and restarts before its analysis (default 0:
	// no soak).
	Soak Duration `json:"soak,omitzero" yaml:"soak,omitempty"`
	// MaxRestarts is how many times a proxy of the step may reconnect
	// during the step before the candidate counts as crashing it (default
	// DefaultMaxRestarts).
	MaxRestarts *int `json:"maxRestarts,omitempty" yaml:"maxRestarts,omitempty"`
	// Analysis configures the checks run after the soak; its shape is
	// rollout/analysis's, kept as written here.
	Analysis json.RawMessage `json:"analysis,omitempty" yaml:"analysis,omitempty"`
	// OnFailure is "rollback" (default) or "pause".
	OnFailure FailureAction `json:"onFailure,omitempty" yaml:"onFailure,omitempty"`
}

// Step is one step: exactly one of its fields is set.
type Step struct {
	// Proxies is the share of each node's proxies served the candidate,
	// "10%".
	Proxies *Text `json:"proxies,omitempty" yaml:"proxies,omitempty"`
	// Nodes selects whole nodes of the source: a list of node ID globs, or
	// a share of the source's nodes ("25%").
	Nodes *NodeSelector `json:"nodes,omitempty" yaml:"nodes,omitempty"`
	// Pause waits: a duration ("30s"), or {} for `legate rollout promote`.
	Pause *Pause `json:"pause,omitempty" yaml:"pause,omitempty"`
}

// FailureAction says what a failed rollout does.
type FailureAction string

const (
	// OnFailureRollback serves the stable revision to every proxy again and
	// taints the candidate.
	OnFailureRollback FailureAction = "rollback"
	// OnFailurePause keeps the canaries where they are and waits for a
	// person (promote, resume or abort); a NACKing proxy is still served
	// the stable revision.
	OnFailurePause FailureAction = "pause"
)

// Defaults of a Policy.
const (
	DefaultAckTimeout  = 30 * time.Second
	DefaultMaxRestarts = 2
	// MaxSteps bounds a policy's steps.
	MaxSteps = 50
	// MaxGlobs bounds a nodes step's globs.
	MaxGlobs = 100
	// Buckets is the number of buckets proxies and nodes are hashed into: a
	// share is counted in basis points (1/100 of a percent).
	Buckets = 10000
)

// Text keeps a scalar as written (a string, or a number turned into its
// text) so that validation, not decoding, judges it and names its field.
type Text string

// UnmarshalJSON takes a string or a number; anything else is kept as
// its JSON so that Compile can quote it.
func (t *Text) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*t = Text(s)
		return nil
	}
	*t = Text(bytes.TrimSpace(b))
	return nil
}

// Duration is a duration written as "30s"; Compile parses it.
type Duration struct{ Text }

// IsZero reports whether nothing was written.
func (d Duration) IsZero() bool { return d.Text == "" }

// MarshalJSON writes the text.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(string(d.Text)) }

// NodeSelector is a list of node ID globs or a share of nodes.
type NodeSelector struct {
	Globs []string
	Share Text
}

// UnmarshalJSON takes a list of strings or a single string ("25%"). A
// list of one percentage (["25%"]) is a share too: that is how the
// Kubernetes API writes it, a CRD field having one type (its schema
// refuses "%" in a glob).
func (s *NodeSelector) UnmarshalJSON(b []byte) error {
	var globs []string
	if err := json.Unmarshal(b, &globs); err == nil {
		if len(globs) == 1 && strings.HasSuffix(globs[0], "%") {
			s.Share = Text(globs[0])
			return nil
		}
		s.Globs = globs
		return nil
	}
	return s.Share.UnmarshalJSON(b)
}

// MarshalJSON writes the form it was read in.
func (s NodeSelector) MarshalJSON() ([]byte, error) {
	if s.Share != "" {
		return json.Marshal(string(s.Share))
	}
	return json.Marshal(s.Globs)
}

// Pause is a timed pause ("30s", or {duration: 30s}) or, written {}, a
// pause until promoted.
type Pause struct {
	Duration Duration `json:"duration,omitzero" yaml:"duration,omitempty"`
	// Untimed is set for {}.
	Untimed bool `json:"-" yaml:"-"`
}

// UnmarshalJSON takes a duration string or an object.
func (p *Pause) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var obj struct {
			Duration Duration `json:"duration"`
		}
		if err := json.Unmarshal(b, &obj); err != nil {
			return fmt.Errorf("pause: %w", err)
		}
		p.Duration, p.Untimed = obj.Duration, obj.Duration.IsZero()
		return nil
	}
	return p.Duration.UnmarshalJSON(b)
}

// MarshalJSON writes {} for an untimed pause and the duration otherwise.
func (p Pause) MarshalJSON() ([]byte, error) {
	if p.Duration.IsZero() {
		return []byte("{}"), nil
	}
	return p.Duration.MarshalJSON()
}

// StepKind says what a step does.
type StepKind string

const (
	StepProxies StepKind = "proxies"
	StepNodes   StepKind = "nodes"
	StepPause   StepKind = "pause"
)

// Plan is a validated Policy with its values parsed: what the state
// machine runs.
type Plan struct {
	Steps       []PlanStep
	AckTimeout  time.Duration
	Soak        time.Duration
	MaxRestarts int
	OnFailure   FailureAction
	// Analysis is the policy's analysis as written; nil without one.
	Analysis json.RawMessage
}

// PlanStep is one validated step.
type PlanStep struct {
	Kind StepKind
	// Share is the proxies (StepProxies) or nodes (StepNodes given as a
	// share) served the candidate, in basis points (0..Buckets).
	Share int
	// Globs are the node ID globs of a StepNodes.
	Globs []string
	// Pause is a StepPause's duration; 0 with Untimed waits for promote.
	Pause   time.Duration
	Untimed bool
}

// Describe is the step for people: "10% of proxies", "nodes edge-canary-*",
// "pause 30s", "pause until promoted".
func (s PlanStep) Describe() string {
	switch s.Kind {
	case StepProxies:
		return FormatShare(s.Share) + " of proxies"
	case StepNodes:
		if s.Globs != nil {
			return "nodes " + strings.Join(s.Globs, ", ")
		}
		return FormatShare(s.Share) + " of nodes"
	case StepPause:
		if s.Untimed {
			return "pause until promoted"
		}
		return "pause " + s.Pause.String()
	}
	return string(s.Kind)
}

// FormatShare writes basis points as a percentage: 1000 -> "10%", 1250 ->
// "12.5%".
func FormatShare(bp int) string {
	return strconv.FormatFloat(float64(bp)/100, 'f', -1, 64) + "%"
}

// Compile validates p and returns its Plan. Errors name the field under
// prefix ("rollout", or "sources[0].rollout" in a config file), e.g.
// `rollout.steps[2].proxies: "110%" is not a percentage between 0 and 100`;
// every problem is reported, joined.
func (p *Policy) Compile(prefix string) (*Plan, error) {
	if prefix == "" {
		prefix = "rollout"
	}
	var errs []error
	fail := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", prefix, field, fmt.Sprintf(format, args...)))
	}
	plan := &Plan{AckTimeout: DefaultAckTimeout, MaxRestarts: DefaultMaxRestarts, OnFailure: OnFailureRollback}
	switch {
	case len(p.Steps) == 0:
		fail("steps", "a rollout needs at least one step")
	case len(p.Steps) > MaxSteps:
		fail("steps", "%d steps, over the limit of %d", len(p.Steps), MaxSteps)
	}
	lastShare := 0
	for i, st := range p.Steps {
		if i >= MaxSteps {
			break
		}
		ps, err := compileStep(st)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.steps[%d]%w", prefix, i, err))
			continue
		}
		if ps.Kind == StepProxies && ps.Share < lastShare {
			errs = append(errs, fmt.Errorf("%s.steps[%d].proxies: %s is less than the %s of an earlier step: a rollout never takes the candidate back from proxies", prefix, i, FormatShare(ps.Share), FormatShare(lastShare)))
		}
		lastShare = max(lastShare, ps.Share*boolInt(ps.Kind == StepProxies))
		plan.Steps = append(plan.Steps, ps)
	}
	if !p.AckTimeout.IsZero() {
		d, err := parseDuration(p.AckTimeout.Text)
		switch {
		case err != nil:
			fail("ackTimeout", "%v", err)
		case d <= 0:
			fail("ackTimeout", "%q must be positive", p.AckTimeout.Text)
		default:
			plan.AckTimeout = d
		}
	}
	if !p.Soak.IsZero() {
		d, err := parseDuration(p.Soak.Text)
		if err != nil {
			fail("soak", "%v", err)
		}
		plan.Soak = d
	}
	if p.MaxRestarts != nil {
		if *p.MaxRestarts < 0 || *p.MaxRestarts > 1000 {
			fail("maxRestarts", "%d is not between 0 and 1000", *p.MaxRestarts)
		}
		plan.MaxRestarts = *p.MaxRestarts
	}
	switch p.OnFailure {
	case "":
	case OnFailureRollback, OnFailurePause:
		plan.OnFailure = p.OnFailure
	default:
		fail("onFailure", "%q is neither %q nor %q", p.OnFailure, OnFailureRollback, OnFailurePause)
	}
	if a := bytes.TrimSpace(p.Analysis); len(a) > 0 && !bytes.Equal(a, []byte("null")) {
		plan.Analysis = p.Analysis
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return plan, nil
}

// compileStep checks one step; its error starts with the field (".proxies: …").
func compileStep(st Step) (PlanStep, error) {
	set := 0
	for _, b := range []bool{st.Proxies != nil, st.Nodes != nil, st.Pause != nil} {
		if b {
			set++
		}
	}
	if set != 1 {
		return PlanStep{}, errors.New(": a step sets exactly one of proxies, nodes and pause")
	}
	switch {
	case st.Proxies != nil:
		bp, err := parseShare(*st.Proxies)
		if err != nil {
			return PlanStep{}, fmt.Errorf(".proxies: %w", err)
		}
		return PlanStep{Kind: StepProxies, Share: bp}, nil
	case st.Nodes != nil:
		if st.Nodes.Share != "" {
			bp, err := parseShare(st.Nodes.Share)
			if err != nil {
				return PlanStep{}, fmt.Errorf(".nodes: %w", err)
			}
			return PlanStep{Kind: StepNodes, Share: bp}, nil
		}
		if len(st.Nodes.Globs) == 0 {
			return PlanStep{}, errors.New(".nodes: give node ID globs or a percentage of nodes")
		}
		if len(st.Nodes.Globs) > MaxGlobs {
			return PlanStep{}, fmt.Errorf(".nodes: %d globs, over the limit of %d", len(st.Nodes.Globs), MaxGlobs)
		}
		for j, g := range st.Nodes.Globs {
			if g == "" || len(g) > 253 {
				return PlanStep{}, fmt.Errorf(".nodes[%d]: a glob is 1 to 253 characters", j)
			}
			if _, err := path.Match(g, ""); err != nil {
				return PlanStep{}, fmt.Errorf(".nodes[%d]: %q is not a valid glob: %w", j, g, err)
			}
		}
		return PlanStep{Kind: StepNodes, Globs: append([]string(nil), st.Nodes.Globs...)}, nil
	default:
		if st.Pause.Untimed {
			return PlanStep{Kind: StepPause, Untimed: true}, nil
		}
		d, err := parseDuration(st.Pause.Duration.Text)
		if err != nil {
			return PlanStep{}, fmt.Errorf(".pause: %w", err)
		}
		if d <= 0 {
			return PlanStep{}, fmt.Errorf(".pause: %q must be positive; write {} to wait for promote", st.Pause.Duration.Text)
		}
		return PlanStep{Kind: StepPause, Pause: d}, nil
	}
}

// parseShare reads "10%" (or "12.5%", at most two decimals) into basis
// points.
func parseShare(t Text) (int, error) {
	s := strings.TrimSpace(string(t))
	num, ok := strings.CutSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if !ok || err != nil || math.IsNaN(v) || v < 0 || v > 100 {
		return 0, fmt.Errorf("%q is not a percentage between 0 and 100", quoteLimit(s))
	}
	bp := v * 100
	if bp != math.Trunc(bp) {
		return 0, fmt.Errorf("%q has more than two decimals", quoteLimit(s))
	}
	return int(bp), nil
}

func parseDuration(t Text) (time.Duration, error) {
	s := strings.TrimSpace(string(t))
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration such as 30s or 5m", quoteLimit(s))
	}
	return d, nil
}

// quoteLimit keeps an echoed value short: the input is a user's.
func quoteLimit(s string) string {
	const maxEcho = 64
	if len(s) > maxEcho {
		return s[:maxEcho] + "…"
	}
	return s
}

// SelectsNode reports whether a nodes step takes node: a glob matches it,
// or its bucket falls within the step's share.
func (s PlanStep) SelectsNode(node string) bool {
	if s.Kind != StepNodes {
		return false
	}
	if s.Globs == nil {
		return NodeBucket(node) < s.Share
	}
	for _, g := range s.Globs {
		if ok, _ := path.Match(g, node); ok {
			return true
		}
	}
	return false
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
