package revisions

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/legate-dev/legate/logging"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/rollout"
)

// Progressive rollout: with a plan for the node's source (Options.Rollouts),
// new content is not published to every proxy at once. The revision served
// stays the stable one (NodeRecord.Published), and the new one, the
// candidate, rides along in the same Publication for the share of proxies
// the current step takes (Publication.Candidate). The step machine
// (rollout.Decide) is fed what the tracker saw of the candidate and
// answers with the share to serve, a promotion or a rollback; the engine
// applies it like any other decision: under mu, with the I/O after.

// analysisDone is the internal event kind that carries an analysis
// verdict from its goroutine to the engine's loop, so that the verdict is
// applied by the node's op holder like every proxy event.
const analysisDone ProxyEventKind = "rollout-analysis"

type analysisDoneEvent struct {
	candidate string
	result    rollout.AnalysisResult
}

// RolloutUnpublished ends a rollout whose candidate newer content
// replaced without a rollout of its own (the source went back to the
// stable content, say): homes tell it apart from a person's abort.
const RolloutUnpublished = "the rollout ended without promotion: its revision is no longer the one to publish"

// maxStepConns bounds the proxies whose reconnects a step counts.
const maxStepConns = 10000

// liveRollout is the part of a rollout that is not stored: rebuilt (empty)
// after a restart, at the price of a step's restart count and a running
// analysis, which starts again.
type liveRollout struct {
	// step is the step conns counts for; conns the Connected events of
	// each proxy of the step since it began.
	step  int
	conns map[string]int
	// analysis is the verdict in for the current step; analyzing cancels
	// the analysis under way (nil when none is).
	analysis  *rollout.AnalysisResult
	analyzing context.CancelFunc
	// announced is the last step reported as pending to the origin.
	announced int
}

func (e *Engine) planFor(n *nodeState) *rollout.Plan {
	if e.rollouts == nil {
		return nil
	}
	return e.rollouts(n.rec.Owner)
}

// reconcileRollout takes over the publication when the newest revision is
// to be rolled out progressively: a plan for the node's source, a stable
// revision served and untainted, and a newer untainted one chosen. It
// reports whether it did; otherwise the caller publishes as without a
// plan, with end set when a split is being served that must end.
// Called with n.op and mu held; mu is released while the Publisher works.
func (e *Engine) reconcileRollout(n *nodeState, c choice, now time.Time) (handled, end bool) {
	rr := n.rec.Rollout
	active := rr.Active()
	plan := e.planFor(n)
	stable := n.rec.Published
	if active {
		stable = rr.Status.Stable
	}
	sr := n.revs[stable]
	if plan == nil || sr == nil || sr.Taint != nil || c.Hash == "" || c.Hash == stable || c.State != StateInSync {
		if active {
			e.endRollout(n, rollout.PhaseAborted, RolloutUnpublished, now)
			return false, true
		}
		return false, false
	}
	cand := n.revs[c.Hash]
	restart := n.rec.Published == ""
	if restart {
		// After a restart: serve the stable revision again under fresh
		// versions, as Restore does for every node, then the split.
		n.rec.Generation++
		version, types := assignVersions(sr.Config, n.rec.Types, n.rec.Generation, true)
		n.rec.Published, n.rec.Version, n.rec.Types = stable, version, types
		n.track.reset(version, now)
		n.verdict = verdictAccepted
		n.base = StateInSync
	}
	if !active || rr.Status.Candidate != c.Hash || restart {
		var prev *rollout.Status
		if rr != nil {
			prev = &rr.Status
		}
		st := rollout.Start(plan, prev, c.Hash, stable, cand.Origin.Commit, now)
		if active && rr.Status.Candidate == c.Hash {
			st = rr.Status // a restart continues where it was
		} else if st.Superseded != "" {
			e.metrics.rollouts.WithLabelValues(render.NodeLabel(n.rec.Node), "superseded").Inc()
			logging.Warn(e.log, "a newer revision supersedes the rollout; restarting from step 1", "node", n.rec.Node, "revision", c.Hash, "superseded", st.Superseded)
		}
		n.rec.Generation++
		version, types := assignVersions(cand.Config, n.rec.Types, n.rec.Generation, false)
		n.rec.Rollout = &RolloutRecord{Status: st, Version: version, Types: types}
		n.track.startCandidate(version)
		n.ro = &liveRollout{step: -1, announced: -1}
		n.changed[c.Hash] = true
		cand.PublishedAt = now
	}
	if n.ro == nil {
		n.ro = &liveRollout{step: -1, announced: -1}
	}
	e.setState(n, StateProgressing)
	if rr := n.rec.Rollout; rr.Status.Share == 0 && rr.Status.Step == 0 {
		// A new rollout: its first step decides what is served. The
		// caller stores the node.
		e.decideRollout(context.Background(), n, now, false)
		if n.rec.Rollout.Active() && n.rec.Rollout.Status.Share > 0 {
			return true, false
		}
	}
	e.serveSplit(n, now)
	return true, false
}

// serveSplit publishes the stable revision with the candidate for the
// rollout's share. A candidate the server refuses is tainted and the
// rollout ends. Called with n.op and mu held.
func (e *Engine) serveSplit(n *nodeState, now time.Time) {
	rr := n.rec.Rollout
	sr, cr := n.revs[n.rec.Published], n.revs[rr.Status.Candidate]
	pub := publication(n.rec.Owner, sr.Config, n.rec.Version, n.rec.Types)
	if rr.Status.Share > 0 {
		cp := publication(n.rec.Owner, cr.Config, rr.Version, rr.Types)
		pub.Candidate, pub.CandidateShare = &cp, rr.Status.Share
	}
	err := e.publish(n.rec.Node, pub)
	switch {
	case err == nil:
		e.metrics.publishes.WithLabelValues(render.NodeLabel(n.rec.Node)).Inc()
	case errors.Is(err, ErrNotReady):
		e.log.Info("the rollout's publication waits", "node", n.rec.Node, "revision", cr.Hash, "reason", err.Error())
	default:
		e.refused(n, cr, err, now)
		e.endRollout(n, rollout.PhaseFailed, "the xDS server refused the candidate: "+err.Error(), now)
		e.unsplit(n)
	}
}

// unsplit serves the stable revision alone again, under the versions it
// was served under: the proxies that never had the candidate get nothing
// new, the canaries get back every type the candidate changed.
func (e *Engine) unsplit(n *nodeState) {
	sr := n.revs[n.rec.Published]
	if sr == nil {
		return
	}
	if err := e.publish(n.rec.Node, publication(n.rec.Owner, sr.Config, n.rec.Version, n.rec.Types)); err != nil {
		e.log.Error(err, "could not serve the stable revision alone again", "node", n.rec.Node)
	}
}

// endRollout marks the rollout over without promotion and forgets what
// was live of it.
func (e *Engine) endRollout(n *nodeState, phase rollout.Phase, msg string, now time.Time) {
	rr := n.rec.Rollout
	if rr == nil {
		return
	}
	rr.Status.Phase, rr.Status.Message = phase, msg
	rr.Status.StepStarted = now
	e.noteRollout(n)
	e.stopAnalysis(n)
	n.ro = nil
	n.track.candidate = ""
	e.metrics.rollouts.WithLabelValues(render.NodeLabel(n.rec.Node), string(phase)).Inc()
}

func (e *Engine) stopAnalysis(n *nodeState) {
	if n.ro != nil && n.ro.analyzing != nil {
		n.ro.analyzing()
		n.ro.analyzing = nil
	}
}

// advanceRollout feeds the step machine what the node's proxies did and
// acts on its answer, as many steps as are satisfied now. Called with
// n.op and mu held (evaluate).
func (e *Engine) advanceRollout(ctx context.Context, n *nodeState, now time.Time) {
	e.decideRollout(ctx, n, now, true)
}

// decideRollout is advanceRollout; store says whether it writes the node
// (reconcile's callers do it themselves).
func (e *Engine) decideRollout(ctx context.Context, n *nodeState, now time.Time, store bool) {
	rr := n.rec.Rollout
	plan := e.planFor(n)
	if plan == nil || n.revs[rr.Status.Candidate] == nil || n.revs[rr.Status.Stable] == nil {
		// The policy went away, or the revisions did: publish as without
		// a plan.
		e.endRollout(n, rollout.PhaseAborted, "the rollout policy was removed", now)
		e.reconcile(n, now, true, false)
		e.commitOrLog(ctx, n, "a rollout's end")
		return
	}
	if n.ro == nil {
		n.ro = &liveRollout{step: -1, announced: -1}
	}
	before := rr.Status
	defer func() {
		// rr is the record decided on; promote and rollBackCandidate
		// end it in place. Not every ACK: the message alone changes
		// with each, and a move is worth a status write.
		if durable(before) != durable(rr.Status) {
			e.noteRollout(n)
		}
	}()
	for range len(plan.Steps) + 2 {
		obs := e.observe1(n, plan, now)
		st, act := rollout.Decide(plan, rr.Status, obs)
		prev := rr.Status
		rr.Status = st
		if st.Step != prev.Step {
			result := "passed"
			e.metrics.steps.WithLabelValues(render.NodeLabel(n.rec.Node), strconv.Itoa(prev.Step+1), result).Inc()
		}
		switch {
		case act.Promote:
			e.promote(ctx, n, now)
			return
		case act.Rollback:
			e.rollBackCandidate(ctx, n, now)
			return
		}
		if st.Failure != nil && prev.Failure == nil {
			// onFailure: pause holds the canaries; say so to the origin.
			e.metrics.steps.WithLabelValues(render.NodeLabel(n.rec.Node), strconv.Itoa(st.Failure.Step), "failed").Inc()
			o := e.outcome(n, n.revs[st.Candidate], OutcomeFailure, "rollout paused: "+st.Message, now)
			o.Rollout = true
			e.emit(o)
		}
		if act.Share != prev.Share {
			e.serveSplit(n, now)
			if !n.rec.Rollout.Active() {
				e.commitOrLog(ctx, n, "a refused candidate")
				return
			}
		}
		if act.Analyze {
			e.startAnalysis(ctx, n, plan)
		}
		if st.Step == prev.Step && st.Share == prev.Share {
			break
		}
	}
	e.announceStep(n, plan, now)
	if store && durable(before) != durable(rr.Status) {
		e.commitOrLog(ctx, n, "a rollout step")
	}
}

// durable is the part of a status worth a store write: not its message,
// which changes with every ACK.
func durable(st rollout.Status) string {
	f := ""
	if st.Failure != nil {
		f = st.Failure.Message
	}
	return fmt.Sprint(st.Step, st.Share, st.Phase, st.UserPaused, st.AnalysisRun, st.Acked.UnixNano(), len(st.Gates), f)
}

func (e *Engine) commitOrLog(ctx context.Context, n *nodeState, what string) {
	if err := e.commit(ctx, n, nil); err != nil {
		e.log.Error(err, "could not store "+what+"; will retry with the next write", "node", n.rec.Node)
	}
}

// announceStep reports the step to the candidate's origin, once per step:
// "rolling out, step 2/5 (10% of proxies)".
func (e *Engine) announceStep(n *nodeState, plan *rollout.Plan, now time.Time) {
	rr := n.rec.Rollout
	if n.ro == nil || n.ro.announced == rr.Status.Step || !rr.Active() {
		return
	}
	n.ro.announced = rr.Status.Step
	text := "rolling out, " + rr.Status.StepName(plan)
	if rr.Status.Superseded != "" && rr.Status.Step == 0 {
		text += "; superseded " + Short(rr.Status.Superseded)
	}
	o := e.outcome(n, n.revs[rr.Status.Candidate], OutcomePending, text, now)
	o.Rollout = true
	e.emit(o)
}

// observe1 is what the step machine is told about the node now.
func (e *Engine) observe1(n *nodeState, plan *rollout.Plan, now time.Time) rollout.Observation {
	rr := n.rec.Rollout
	obs := rollout.Observation{Now: now}
	if rr.Status.Step < len(plan.Steps) {
		step := plan.Steps[rr.Status.Step]
		if step.Kind == rollout.StepNodes {
			obs.Selected = step.SelectsNode(n.rec.Node)
			obs.PeersDone = !obs.Selected && e.peersPassed(n, step, rr.Status.Step)
		}
	}
	obs.InStep, obs.Acked, obs.Waiting, obs.Rejection = n.track.canaries(rr.Status.Share, n.ownerTenant())
	if n.ro.step != rr.Status.Step {
		n.ro.step, n.ro.conns = rr.Status.Step, map[string]int{}
	}
	// Every connect of a step's proxy during the step is a restart: the
	// step began with the proxies it has (a proxy that joins the fleet
	// mid-step counts one, well under any useful maxRestarts).
	for p, c := range n.ro.conns {
		if c > obs.Restarts || (c == obs.Restarts && p < obs.RestartProxy) {
			obs.Restarts, obs.RestartProxy = c, p
		}
	}
	obs.Analysis = n.ro.analysis
	return obs
}

// peersPassed reports whether the nodes of the same source that a nodes
// step takes have all passed it. Called with mu held.
func (e *Engine) peersPassed(n *nodeState, step rollout.PlanStep, idx int) bool {
	for id, o := range e.nodes {
		if o == n || o.rec.Owner != n.rec.Owner || !step.SelectsNode(id) {
			continue
		}
		if r := o.rec.Rollout; r.Active() && r.Status.Step <= idx {
			return false
		}
	}
	return true
}

// countConnect notes a proxy of the current step connecting: more than
// one connect in a step is a restart.
func (n *nodeState) countConnect(ev ProxyEvent) {
	rr := n.rec.Rollout
	if n.ro == nil || !rr.Active() || !rollout.InShare(ev.Bucket, rr.Status.Share) {
		return
	}
	if n.ro.step != rr.Status.Step {
		n.ro.step, n.ro.conns = rr.Status.Step, map[string]int{}
	}
	key := proxyKey(ev)
	if _, ok := n.ro.conns[key]; ok || len(n.ro.conns) < maxStepConns {
		n.ro.conns[key]++
	}
}

// startAnalysis runs the step's analysis on a goroutine of its own; its
// verdict comes back as an event. Called with mu held; nothing here waits.
func (e *Engine) startAnalysis(ctx context.Context, n *nodeState, plan *rollout.Plan) {
	if n.ro.analyzing != nil {
		return
	}
	rr := n.rec.Rollout
	cand := n.revs[rr.Status.Candidate]
	subject := rollout.Subject{
		Node: n.rec.Node, Source: n.rec.Owner, Revision: cand.Hash, Commit: cand.Origin.Commit,
		Step: rr.Status.Step + 1, Steps: len(plan.Steps),
	}
	run := rr.Status.AnalysisRun
	actx, cancel := context.WithCancel(ctx)
	n.ro.analyzing = cancel
	analyzer := e.analyzer
	go func() {
		defer cancel()
		v, msg := rollout.VerdictInconclusive, "no analyzer is configured"
		if analyzer != nil {
			var err error
			v, msg, err = analyzer.Analyze(actx, subject)
			if err != nil {
				v, msg = rollout.VerdictInconclusive, "the analysis could not run: "+err.Error()
			}
		}
		if actx.Err() != nil {
			return // the rollout moved on without it
		}
		e.queue.push(ProxyEvent{Kind: analysisDone, Node: subject.Node, Proxy: "rollout", analysis: &analysisDoneEvent{
			candidate: subject.Revision,
			result:    rollout.AnalysisResult{Step: subject.Step, Run: run, Verdict: v, Message: msg},
		}})
	}()
}

// analysisIn takes an analysis verdict. Called with n.op and mu held.
func (n *nodeState) analysisIn(ev ProxyEvent) bool {
	rr := n.rec.Rollout
	if ev.analysis == nil || n.ro == nil || !rr.Active() || rr.Status.Candidate != ev.analysis.candidate {
		return false
	}
	n.ro.analyzing = nil
	r := ev.analysis.result
	n.ro.analysis = &r
	return true
}

// promote makes the candidate the revision served to every proxy, under
// the versions the canaries already have. Called with n.op and mu held.
func (e *Engine) promote(ctx context.Context, n *nodeState, now time.Time) {
	rr := n.rec.Rollout
	cand := n.revs[rr.Status.Candidate]
	e.stopAnalysis(n)
	n.ro = nil
	err := e.publish(n.rec.Node, publication(n.rec.Owner, cand.Config, rr.Version, rr.Types))
	if err != nil && !errors.Is(err, ErrNotReady) {
		e.refused(n, cand, err, now)
		e.endRollout(n, rollout.PhaseFailed, "the xDS server refused the candidate: "+err.Error(), now)
		e.unsplit(n)
		e.commitOrLog(ctx, n, "a refused promotion")
		return
	}
	e.metrics.rollouts.WithLabelValues(render.NodeLabel(n.rec.Node), string(rollout.PhaseSucceeded)).Inc()
	e.metrics.publishes.WithLabelValues(render.NodeLabel(n.rec.Node)).Inc()
	n.rec.Published, n.rec.Version, n.rec.Types = cand.Hash, rr.Version, rr.Types
	cand.PublishedAt = now
	n.changed[cand.Hash] = true
	n.track.promote(now)
	n.verdict = verdictPending
	n.base = StateInSync
	n.announce, n.finalSent = true, false
	e.log.Info("rollout promoted the revision to every proxy", "node", n.rec.Node, "revision", cand.Hash, "commit", cand.Origin.Commit)
	e.commitOrLog(ctx, n, "a promotion")
	// The success is reported once every proxy has answered, as for any
	// publication.
	e.evaluate(ctx, n, now)
}

// rollBackCandidate taints the candidate with the rollout's failure (or a
// person's abort) and serves the stable revision to every proxy again.
// Called with n.op and mu held.
func (e *Engine) rollBackCandidate(ctx context.Context, n *nodeState, now time.Time) {
	rr := n.rec.Rollout
	cand := n.revs[rr.Status.Candidate]
	e.stopAnalysis(n)
	n.ro = nil
	n.track.candidate = ""
	var rej []ProxyRejection
	if f := rr.Status.Failure; f != nil && f.Proxy != "" {
		rej = []ProxyRejection{{Proxy: f.Proxy, Error: f.Message}}
	}
	if rr.Status.Failure != nil {
		e.metrics.steps.WithLabelValues(render.NodeLabel(n.rec.Node), strconv.Itoa(rr.Status.Failure.Step), "failed").Inc()
	}
	msg := "rollout " + rr.Status.Message
	cand.Taint = &Taint{At: now, Proxies: rej, Message: msg}
	n.changed[cand.Hash] = true
	e.metrics.taints.WithLabelValues(render.NodeLabel(n.rec.Node)).Inc()
	e.metrics.rollouts.WithLabelValues(render.NodeLabel(n.rec.Node), string(rr.Status.Phase)).Inc()
	e.log.Error(nil, "rollout failed; the candidate is tainted and the stable revision served to every proxy", "node", n.rec.Node, "revision", cand.Hash, "commit", cand.Origin.Commit, "message", msg)
	// The taint is stored before the canaries are moved back, as for any
	// rollback: a crash in between must not roll the candidate out again.
	e.commitOrLog(ctx, n, "a rollout's taint")
	e.unsplit(n)
	n.base = choose(n.candidates(nil)).State
	n.verdict = verdictAccepted
	e.settle(n)
	e.emit(Outcome{
		Node: n.rec.Node, Hash: cand.Hash, Origin: cand.Origin, Status: OutcomeFailure, State: n.state,
		Description: msg, Rejections: rej, Time: now, Rollout: true,
	})
}
