package rollout

import (
	"errors"
	"fmt"
	"time"
)

// Phase is where a rollout stands.
type Phase string

const (
	// PhaseProgressing: the rollout moves through its steps.
	PhaseProgressing Phase = "Progressing"
	// PhasePaused: it waits for a person (an untimed pause, a pause
	// command, an inconclusive analysis, or a failure with onFailure:
	// pause).
	PhasePaused Phase = "Paused"
	// PhaseSucceeded: every step passed; the candidate is the stable
	// revision now.
	PhaseSucceeded Phase = "Succeeded"
	// PhaseFailed: a gate failed and the candidate was rolled back.
	PhaseFailed Phase = "Failed"
	// PhaseAborted: a person aborted it; the candidate was rolled back.
	PhaseAborted Phase = "Aborted"
)

// Done reports whether the rollout is over.
func (p Phase) Done() bool { return p == PhaseSucceeded || p == PhaseFailed || p == PhaseAborted }

// Status is a rollout's stored state: everything a restarted or new
// leader needs to continue where it was.
type Status struct {
	// Candidate and Stable are revision hashes; Commit is the candidate's.
	Candidate string `json:"candidate"`
	Stable    string `json:"stable,omitempty"`
	Commit    string `json:"commit,omitempty"`
	// Step is the current step, from 0; Steps is the plan's count.
	Step  int   `json:"step"`
	Steps int   `json:"steps"`
	Phase Phase `json:"phase"`
	// Share is the share of proxies served the candidate now, in basis
	// points.
	Share int `json:"share"`
	// Started is when the rollout began; StepStarted when its current step
	// began; Acked when the step's proxies had all ACKed (zero until).
	Started     time.Time `json:"started"`
	StepStarted time.Time `json:"stepStarted"`
	Acked       time.Time `json:"acked,omitzero"`
	// UserPaused is set by the pause command and cleared by resume.
	UserPaused bool `json:"userPaused,omitempty"`
	// Message says for people why the rollout waits, or how it ended.
	Message string `json:"message,omitempty"`
	// Gates are the gate results of the current step (the last one when
	// the rollout is over).
	Gates []GateResult `json:"gates,omitempty"`
	// Failure names the step, the proxy and its text when a gate failed.
	Failure *Failure `json:"failure,omitempty"`
	// Superseded is the candidate this rollout replaced, if any.
	Superseded string `json:"superseded,omitempty"`
	// AnalysisRun counts the analyses asked for; a verdict counts only
	// for the run it answers (resume after an inconclusive one asks again).
	AnalysisRun int `json:"analysisRun,omitempty"`
}

// GateResult is one gate's result at one step.
type GateResult struct {
	Gate    Gate      `json:"gate"`
	Passed  bool      `json:"passed"`
	Message string    `json:"message,omitempty"`
	At      time.Time `json:"at"`
}

// Gate names a gate, in the order they are checked.
type Gate string

const (
	GateAck      Gate = "ack"
	GateSoak     Gate = "soak"
	GateAnalysis Gate = "analysis"
	GatePause    Gate = "pause"
	GateNodes    Gate = "nodes"
)

// Failure is why a rollout failed.
type Failure struct {
	// Step is the failed step, from 1, and Describe says what it was.
	Step     int    `json:"step"`
	Describe string `json:"describe"`
	Proxy    string `json:"proxy,omitempty"`
	Message  string `json:"message"`
}

// Rejection is a proxy's NACK of the candidate.
type Rejection struct {
	Proxy string
	Error string
}

// Observation is what the engine saw of the node when it asks Decide.
type Observation struct {
	Now time.Time
	// Selected: the current nodes step takes this node. PeersDone: the
	// nodes the current nodes step takes have all passed it (read when
	// this node is not selected).
	Selected  bool
	PeersDone bool
	// InStep counts the connected proxies served the candidate; Acked
	// those that ACKed it with nothing outstanding; Waiting names one
	// that has not.
	InStep  int
	Acked   int
	Waiting string
	// Rejection is the first NACK of the candidate, if any.
	Rejection *Rejection
	// Restarts is the most reconnects of one proxy of the step since the
	// step began, and RestartProxy that proxy.
	Restarts     int
	RestartProxy string
	// Analysis is the verdict of the current step's analysis, once it is
	// in; nil while none is.
	Analysis *AnalysisResult
}

// AnalysisResult is an analysis verdict for one step.
type AnalysisResult struct {
	// Step (from 1) and Run (Status.AnalysisRun) say which request it
	// answers.
	Step    int
	Run     int
	Verdict Verdict
	Message string
}

// Action is what the engine does after a decision.
type Action struct {
	// Share is the share of proxies to serve the candidate, in basis
	// points (Buckets: all).
	Share int
	// Promote: the candidate becomes the stable revision, served to all.
	Promote bool
	// Rollback: the candidate is tainted with Status.Failure and the
	// stable revision is served to all.
	Rollback bool
	// Analyze: run the analysis of the current step.
	Analyze bool
	// WakeAt is when a timer of the step runs out (zero: none); the
	// engine decides again then.
	WakeAt time.Time
}

// Start begins a rollout of candidate over stable. A rollout of another
// candidate that was not over is superseded: the new one starts from the
// first step and says so.
func Start(plan *Plan, prev *Status, candidate, stable, commit string, now time.Time) Status {
	st := Status{
		Candidate: candidate, Stable: stable, Commit: commit, Steps: len(plan.Steps),
		Phase: PhaseProgressing, Started: now, StepStarted: now,
	}
	if prev != nil && !prev.Phase.Done() && prev.Candidate != candidate {
		st.Superseded = prev.Candidate
		st.Message = fmt.Sprintf("superseded candidate %s; restarted from step 1", short(prev.Candidate))
	}
	return st
}

// Decide moves a rollout on from what the engine observed. It advances at
// most one step per call: the engine serves the new step's share and asks
// again with fresh observations.
func Decide(plan *Plan, st Status, obs Observation) (Status, Action) {
	if st.Phase.Done() {
		return st, finalAction(st)
	}
	if st.Step >= len(plan.Steps) {
		return succeed(st, obs.Now)
	}
	step := plan.Steps[st.Step]
	if obs.Rejection != nil && st.Share > 0 {
		return fail(plan, st, step, obs.Rejection.Proxy, "rejected the candidate: "+obs.Rejection.Error, obs.Now)
	}
	act := Action{Share: st.Share}
	if st.UserPaused {
		st.Message = fmt.Sprintf("paused at %s by a person; resume or promote", stepName(plan, st.Step))
		return st, act
	}
	if st.Phase == PhasePaused {
		return st, act
	}
	switch step.Kind {
	case StepPause:
		if step.Untimed {
			st.Phase = PhasePaused
			st.Message = fmt.Sprintf("waiting at %s for `legate rollout promote`", stepName(plan, st.Step))
			return st, act
		}
		end := st.StepStarted.Add(step.Pause)
		if obs.Now.Before(end) {
			st.Message = fmt.Sprintf("pausing at %s until %s", stepName(plan, st.Step), end.UTC().Format(time.RFC3339))
			act.WakeAt = end
			return st, act
		}
		st.Gates = append(st.Gates, GateResult{Gate: GatePause, Passed: true, At: obs.Now})
		return advance(plan, st, obs.Now)
	case StepNodes:
		if !obs.Selected {
			if !obs.PeersDone {
				st.Message = fmt.Sprintf("waiting at %s for the nodes it takes", stepName(plan, st.Step))
				return st, act
			}
			st.Gates = append(st.Gates, GateResult{Gate: GateNodes, Passed: true, Message: "the step's nodes passed", At: obs.Now})
			return advance(plan, st, obs.Now)
		}
		return gates(plan, st, step, Buckets, obs)
	default:
		return gates(plan, st, step, max(step.Share, st.Share), obs)
	}
}

// gates runs the gates of a proxies or nodes step in order: every proxy of
// the step ACKed within ackTimeout; the soak passed with no proxy
// restarting more than maxRestarts times; the analysis passed.
func gates(plan *Plan, st Status, step PlanStep, share int, obs Observation) (Status, Action) {
	if st.Share != share {
		// The step's proxies are served the candidate from now on; the
		// gates are judged on the next observation.
		st.Share = share
		st.StepStarted, st.Acked, st.Gates = obs.Now, time.Time{}, nil
		st.Message = fmt.Sprintf("serving %s; waiting for ACKs", stepName(plan, st.Step))
		return st, Action{Share: share, WakeAt: obs.Now.Add(plan.AckTimeout)}
	}
	act := Action{Share: share}
	if st.Acked.IsZero() {
		if obs.Acked < obs.InStep {
			deadline := st.StepStarted.Add(plan.AckTimeout)
			if !obs.Now.Before(deadline) {
				return fail(plan, st, step, obs.Waiting, fmt.Sprintf("did not ACK the candidate within %s", plan.AckTimeout), obs.Now)
			}
			st.Message = fmt.Sprintf("waiting at %s for ACKs: %d of %d proxies", stepName(plan, st.Step), obs.Acked, obs.InStep)
			act.WakeAt = deadline
			return st, act
		}
		st.Acked = obs.Now
		st.Gates = append(st.Gates, GateResult{Gate: GateAck, Passed: true, Message: fmt.Sprintf("%d proxies ACKed", obs.InStep), At: obs.Now})
	}
	if obs.Restarts > plan.MaxRestarts {
		return fail(plan, st, step, obs.RestartProxy, fmt.Sprintf("reconnected %d times during the step (maxRestarts %d)", obs.Restarts, plan.MaxRestarts), obs.Now)
	}
	if !hasGate(st, GateSoak) {
		end := st.Acked.Add(plan.Soak)
		if obs.Now.Before(end) {
			st.Message = fmt.Sprintf("soaking at %s until %s", stepName(plan, st.Step), end.UTC().Format(time.RFC3339))
			act.WakeAt = end
			return st, act
		}
		st.Gates = append(st.Gates, GateResult{Gate: GateSoak, Passed: true, At: obs.Now})
	}
	if plan.Analysis != nil {
		a := obs.Analysis
		if a == nil || a.Step != st.Step+1 || a.Run != st.AnalysisRun {
			st.Message = fmt.Sprintf("analysing %s", stepName(plan, st.Step))
			act.Analyze = true
			return st, act
		}
		switch a.Verdict {
		case VerdictPass:
			st.Gates = append(st.Gates, GateResult{Gate: GateAnalysis, Passed: true, Message: a.Message, At: obs.Now})
		case VerdictFail:
			return fail(plan, st, step, "", "analysis failed: "+a.Message, obs.Now)
		default:
			st.Gates = append(st.Gates, GateResult{Gate: GateAnalysis, Message: "inconclusive: " + a.Message, At: obs.Now})
			st.Phase = PhasePaused
			st.Message = fmt.Sprintf("analysis of %s was inconclusive (%s); promote or abort", stepName(plan, st.Step), a.Message)
			return st, act
		}
	}
	return advance(plan, st, obs.Now)
}

func hasGate(st Status, g Gate) bool {
	for _, r := range st.Gates {
		if r.Gate == g && r.Passed {
			return true
		}
	}
	return false
}

// advance goes to the next step, or ends the rollout after the last.
func advance(plan *Plan, st Status, now time.Time) (Status, Action) {
	st.Step++
	st.StepStarted, st.Acked, st.Gates, st.Phase = now, time.Time{}, nil, PhaseProgressing
	if st.Step >= len(plan.Steps) {
		return succeed(st, now)
	}
	st.Message = fmt.Sprintf("at %s", stepName(plan, st.Step))
	return st, Action{Share: st.Share, WakeAt: now}
}

func succeed(st Status, _ time.Time) (Status, Action) {
	st.Phase, st.Share, st.Step = PhaseSucceeded, Buckets, st.Steps
	st.Message = "promoted to every proxy"
	return st, finalAction(st)
}

// fail ends the step in failure: a rollback, or a pause that keeps the
// canaries where they are (onFailure: pause).
func fail(plan *Plan, st Status, step PlanStep, proxy, msg string, now time.Time) (Status, Action) {
	st.Failure = &Failure{Step: st.Step + 1, Describe: step.Describe(), Proxy: proxy, Message: msg}
	text := fmt.Sprintf("failed at %s: %s", stepName(plan, st.Step), msg)
	if proxy != "" {
		text = fmt.Sprintf("failed at %s: proxy %s %s", stepName(plan, st.Step), proxy, msg)
	}
	if plan.OnFailure == OnFailurePause {
		st.Phase = PhasePaused
		st.Message = text + "; paused (onFailure: pause): promote or abort"
		return st, Action{Share: st.Share}
	}
	st.Phase, st.Message = PhaseFailed, text+"; rolled back"
	return st, finalAction(st)
}

func finalAction(st Status) Action {
	switch st.Phase {
	case PhaseSucceeded:
		return Action{Share: Buckets, Promote: true}
	case PhaseFailed, PhaseAborted:
		return Action{Rollback: true}
	}
	return Action{Share: st.Share}
}

// stepName is "step 2/5 (10% of proxies)".
func stepName(plan *Plan, i int) string {
	if i >= len(plan.Steps) {
		return fmt.Sprintf("step %d/%d", i+1, len(plan.Steps))
	}
	return fmt.Sprintf("step %d/%d (%s)", i+1, len(plan.Steps), plan.Steps[i].Describe())
}

// StepName is the current step for people: "step 2/5 (10% of proxies)".
func (st Status) StepName(plan *Plan) string { return stepName(plan, st.Step) }

// Command is a person's order to a rollout.
type Command string

const (
	CommandPromote Command = "promote"
	CommandPause   Command = "pause"
	CommandResume  Command = "resume"
	CommandAbort   Command = "abort"
)

// ErrDone is returned for a command to a rollout that is over.
var ErrDone = errors.New("the rollout is over")

// Apply carries out a command. Promote ends the current step (an untimed
// pause, an inconclusive analysis, a failure held by onFailure: pause, or
// any other) and goes to the next; pause holds the rollout at its step
// until resume; abort rolls the candidate back.
func Apply(plan *Plan, st Status, cmd Command, now time.Time) (Status, error) {
	if st.Phase.Done() {
		return st, fmt.Errorf("%s candidate %s: %w (%s)", cmd, short(st.Candidate), ErrDone, st.Phase)
	}
	switch cmd {
	case CommandPromote:
		st.UserPaused, st.Failure = false, nil
		st, _ = advance(plan, st, now)
		if !st.Phase.Done() {
			st.Message = fmt.Sprintf("promoted to %s by a person", stepName(plan, st.Step))
		}
	case CommandPause:
		st.UserPaused = true
	case CommandResume:
		if st.Failure != nil {
			return st, fmt.Errorf("resume: %s failed (%s): promote or abort", stepName(plan, st.Step), st.Failure.Message)
		}
		st.UserPaused = false
		if st.Phase == PhasePaused && !(st.Step < len(plan.Steps) && plan.Steps[st.Step].Untimed) {
			// An inconclusive analysis runs again.
			st.AnalysisRun++
			st.Phase = PhaseProgressing
			st.Gates = nil
			st.Acked = time.Time{}
			st.StepStarted = now
		}
	case CommandAbort:
		st.Phase, st.Message = PhaseAborted, fmt.Sprintf("aborted at %s by a person; rolled back", stepName(plan, st.Step))
	default:
		return st, fmt.Errorf("unknown rollout command %q: use promote, pause, resume or abort", cmd)
	}
	return st, nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
