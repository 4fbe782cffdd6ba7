package revisions

import (
	"context"
	"fmt"
	"time"

	"github.com/legate-dev/legate/rollout"
)

// RolloutCommand carries out a person's command (promote, pause, resume,
// abort) on the rollout under way at node, and returns its status after.
func (e *Engine) RolloutCommand(ctx context.Context, node string, cmd rollout.Command) (rollout.Status, error) {
	e.phase.RLock()
	defer e.phase.RUnlock()
	n, release := e.lockNode(ctx, node, false)
	defer release()
	if e.following {
		return rollout.Status{}, ErrNotLeader
	}
	if n == nil || len(n.rec.History) == 0 {
		return rollout.Status{}, fmt.Errorf("node %q: %w", node, ErrNotFound)
	}
	rr := n.rec.Rollout
	if rr == nil {
		return rollout.Status{}, fmt.Errorf("node %q has no rollout: %w", node, ErrNotFound)
	}
	plan := e.planFor(n)
	if plan == nil {
		return rr.Status, fmt.Errorf("node %q: its source %q has no rollout policy", node, n.rec.Owner)
	}
	now := e.clock.Now()
	st, err := rollout.Apply(plan, rr.Status, cmd, now)
	if err != nil {
		return rr.Status, fmt.Errorf("node %q: %w", node, err)
	}
	rr.Status = st
	e.noteRollout(n)
	e.log.Info("rollout command", "node", node, "command", string(cmd), "revision", st.Candidate)
	if cmd == rollout.CommandResume && n.ro != nil {
		n.ro.analysis = nil
	}
	if err := e.commit(ctx, n, nil); err != nil {
		return st, err
	}
	e.advanceRollout(ctx, n, now)
	return n.rec.Rollout.Status, nil
}

// RolloutView is a rollout as the status page and `legate rollout status`
// show it.
type RolloutView struct {
	Node   string         `json:"node"`
	Source string         `json:"source,omitempty"`
	Status rollout.Status `json:"status"`
	// Step describes the current step ("step 2/5 (10% of proxies)").
	Step string `json:"step"`
	// OnCandidate and OnStable count the connected proxies on each side;
	// Acked those of the candidate's side that ACKed it.
	OnCandidate int `json:"onCandidate"`
	OnStable    int `json:"onStable"`
	Acked       int `json:"acked"`
	// NextGate is the gate the rollout waits for ("ack", "soak",
	// "analysis", "pause", "nodes", or "promote").
	NextGate string `json:"nextGate,omitempty"`
	// Deadline is when the next gate's timer runs out, when it has one:
	// the step's ackTimeout while it waits for ACKs, the end of its soak,
	// the end of a timed pause. The page and the CLI say "12s left" from
	// it.
	Deadline *time.Time `json:"deadline,omitempty"`
}

// Rollout returns the rollout of node (under way or the last one).
func (e *Engine) Rollout(node string) (RolloutView, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := e.nodes[node]
	if n == nil || n.rec.Rollout == nil {
		return RolloutView{}, false
	}
	return e.rolloutView(n), true
}

// Rollouts returns every node's rollout, in no particular order.
func (e *Engine) Rollouts() []RolloutView {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []RolloutView
	for _, n := range e.nodes {
		if n.rec.Rollout != nil {
			out = append(out, e.rolloutView(n))
		}
	}
	return out
}

func (e *Engine) rolloutView(n *nodeState) RolloutView {
	rr := n.rec.Rollout
	v := RolloutView{Node: n.rec.Node, Source: n.rec.Owner, Status: rr.Status}
	v.Status.Gates = append([]rollout.GateResult(nil), rr.Status.Gates...)
	if f := rr.Status.Failure; f != nil {
		fc := *f
		v.Status.Failure = &fc
	}
	connected := n.track.connected()
	if rr.Active() {
		v.OnCandidate, v.Acked, _, _ = n.track.canaries(rr.Status.Share, n.ownerTenant())
		v.OnStable = connected - v.OnCandidate
	} else if rr.Status.Phase == rollout.PhaseSucceeded {
		v.OnCandidate = connected
	} else {
		v.OnStable = connected
	}
	plan := e.planFor(n)
	if plan != nil {
		v.Step = rr.Status.StepName(plan)
		v.NextGate = nextGate(plan, rr.Status)
		v.Deadline = gateDeadline(plan, rr.Status, v.NextGate)
	}
	return v
}

// gateDeadline is when the timer of gate runs out at the rollout's
// current step; nil when the gate has none (analysis, promote).
func gateDeadline(plan *rollout.Plan, st rollout.Status, gate string) *time.Time {
	var t time.Time
	switch gate {
	case string(rollout.GateAck):
		t = st.StepStarted.Add(plan.AckTimeout)
	case string(rollout.GateSoak):
		if st.Acked.IsZero() {
			return nil
		}
		t = st.Acked.Add(plan.Soak)
	case string(rollout.GatePause):
		if step := plan.Steps[st.Step]; !step.Untimed {
			t = st.StepStarted.Add(step.Pause)
		}
	}
	if t.IsZero() {
		return nil
	}
	return &t
}

func nextGate(plan *rollout.Plan, st rollout.Status) string {
	if st.Phase.Done() || st.Step >= len(plan.Steps) {
		return ""
	}
	if st.Phase == rollout.PhasePaused || st.UserPaused {
		return "promote"
	}
	step := plan.Steps[st.Step]
	switch {
	case step.Kind == rollout.StepPause:
		return string(rollout.GatePause)
	case st.Acked.IsZero():
		return string(rollout.GateAck)
	case !hasPassed(st, rollout.GateSoak):
		return string(rollout.GateSoak)
	case plan.Analysis != nil:
		return string(rollout.GateAnalysis)
	}
	return ""
}

func hasPassed(st rollout.Status, g rollout.Gate) bool {
	for _, r := range st.Gates {
		if r.Gate == g && r.Passed {
			return true
		}
	}
	return false
}
