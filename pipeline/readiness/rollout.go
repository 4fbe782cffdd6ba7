package readiness

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/rollout"
)

// Reasons of the Progressing condition while a rollout is under way,
// beyond the API's (v1alpha1.ReasonRollout*): the step it is at, or the
// analysis it waits for.
const (
	// ReasonWaitingForAnalysis: the step's proxies ACKed and soaked; its
	// analysis runs.
	ReasonWaitingForAnalysis = "WaitingForAnalysis"
	// reasonStep is Step1, Step2, …: the step the rollout is at.
	reasonStep = "Step%d"
)

// Event reasons of a rollout, once per change (RolloutEvents).
const (
	EventRolloutStep = "RolloutStep"
)

// maxRolloutMessage bounds status.rollout.message: it carries a proxy's
// own NACK text, which legate does not control.
const maxRolloutMessage = 1024

// RolloutStatus is the status.rollout of an object from the rollouts of
// its nodes (views): an EnvoyConfig's one node, or the nodes an
// EnvoySource renders. It is nil when none of them has had a rollout.
//
// For several nodes it says where the source's newest rollout stands as a
// whole: the nodes of the newest commit count (a node the commit did not
// change keeps its older, ended rollout and is left out), their proxies
// are summed, and the rest is the word of the node that holds the
// rollout back: paused before progressing, the earliest step first, and
// once all ended, failed before aborted before succeeded. Its message
// names that node.
func RolloutStatus(views []revisions.RolloutView) *v1alpha1.RolloutStatus {
	if len(views) == 0 {
		return nil
	}
	newest := slices.MaxFunc(views, func(a, b revisions.RolloutView) int {
		return cmp.Or(cmpActive(a, b), a.Status.Started.Compare(b.Status.Started), strings.Compare(b.Node, a.Node))
	})
	var of []revisions.RolloutView
	for _, v := range views {
		if v.Status.Commit == newest.Status.Commit && active(v) == active(newest) {
			of = append(of, v)
		}
	}
	lead := slices.MinFunc(of, func(a, b revisions.RolloutView) int {
		return cmp.Or(rank(a.Status.Phase)-rank(b.Status.Phase), a.Status.Step-b.Status.Step, strings.Compare(a.Node, b.Node))
	})
	st := lead.Status
	out := &v1alpha1.RolloutStatus{
		Phase:          string(st.Phase),
		Step:           int32(min(st.Step+1, st.Steps)),
		Total:          int32(st.Steps),
		Revision:       revisions.Short(st.Candidate),
		StableRevision: revisions.Short(st.Stable),
		Commit:         st.Commit,
		StartedAt:      timeOf(st.Started),
		StepStartedAt:  timeOf(st.StepStarted),
		Gate:           lead.NextGate,
		Proxies:        &v1alpha1.RolloutProxies{},
	}
	if out.Phase == string(rollout.PhaseProgressing) && out.Gate == "promote" {
		out.Phase = string(rollout.PhasePaused) // by a person's pause
	}
	msg := st.Message
	if len(views) > 1 {
		msg = fmt.Sprintf("node %s: %s", lead.Node, msg)
		if len(of) > 1 {
			msg += fmt.Sprintf(" (%d nodes rolling out this commit)", len(of))
		}
	}
	out.Message = Bounded(msg, maxRolloutMessage)
	for _, v := range of {
		out.Proxies.New += int32(v.OnCandidate)
		out.Proxies.Old += int32(v.OnStable)
	}
	out.Analysis = analysisOf(st)
	return out
}

func active(v revisions.RolloutView) bool { return !v.Status.Phase.Done() }

// cmpActive orders a rollout under way after one that ended: the newest
// is the one under way.
func cmpActive(a, b revisions.RolloutView) int {
	switch {
	case active(a) == active(b):
		return 0
	case active(a):
		return 1
	}
	return -1
}

// rank orders phases by how much they hold the source back.
func rank(p rollout.Phase) int {
	switch p {
	case rollout.PhasePaused:
		return 0
	case rollout.PhaseProgressing:
		return 1
	case rollout.PhaseFailed:
		return 2
	case rollout.PhaseAborted:
		return 3
	}
	return 4
}

// timeOf is t to the second (what the API server keeps of a time, so that
// a status read back compares equal to the one computed), nil when zero.
func timeOf(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t.UTC().Truncate(time.Second))
	return &mt
}

// analysisOf is the last analysis verdict of the current step (or the
// failed one).
func analysisOf(st rollout.Status) *v1alpha1.RolloutAnalysisStatus {
	if f := st.Failure; f != nil && f.Proxy == "" && strings.HasPrefix(f.Message, "analysis failed: ") {
		return &v1alpha1.RolloutAnalysisStatus{Phase: "Failed", Message: Bounded(strings.TrimPrefix(f.Message, "analysis failed: "), maxRolloutMessage)}
	}
	for _, g := range slices.Backward(st.Gates) {
		if g.Gate != rollout.GateAnalysis {
			continue
		}
		if g.Passed {
			return &v1alpha1.RolloutAnalysisStatus{Phase: "Successful", Message: Bounded(g.Message, maxRolloutMessage)}
		}
		return &v1alpha1.RolloutAnalysisStatus{Phase: "Inconclusive", Message: Bounded(strings.TrimPrefix(g.Message, "inconclusive: "), maxRolloutMessage)}
	}
	return nil
}

// SetProgressing sets the Progressing condition from ro (the object's
// status.rollout) at generation gen: True while the rollout is under way,
// with the step it is at (Step2), WaitingForAnalysis or RolloutPaused as
// its reason; False once it ended: RolloutSucceeded, RolloutFailed,
// RolloutAborted, or RolloutSuperseded when newer content took its place
// without a rollout. Without a rollout the condition is removed.
func SetProgressing(conds *[]metav1.Condition, gen int64, ro *v1alpha1.RolloutStatus) {
	if ro == nil {
		meta.RemoveStatusCondition(conds, v1alpha1.ConditionProgressing)
		return
	}
	c := metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, ObservedGeneration: gen, Message: ro.Message}
	switch rollout.Phase(ro.Phase) {
	case rollout.PhasePaused:
		c.Reason = v1alpha1.ReasonRolloutPaused
	case rollout.PhaseSucceeded:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonRolloutSucceeded
	case rollout.PhaseFailed:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonRolloutFailed
	case rollout.PhaseAborted:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonRolloutAborted
		if strings.Contains(ro.Message, revisions.RolloutUnpublished) {
			c.Reason = v1alpha1.ReasonRolloutSuperseded
		}
	default:
		c.Reason = fmt.Sprintf(reasonStep, ro.Step)
		if ro.Gate == string(rollout.GateAnalysis) {
			c.Reason = ReasonWaitingForAnalysis
		}
	}
	if c.Message == "" {
		c.Message = ro.Phase
	}
	meta.SetStatusCondition(conds, c)
}

// RolloutEvent is a Kubernetes event a rollout's change deserves.
type RolloutEvent struct {
	Type, Reason, Note string
}

// RolloutEvents are the events of a rollout going from was to now (the
// object's status.rollout before and after): a step started, promoted to
// every proxy, paused, aborted, failed, superseded by a newer commit.
// Comparing the stored status with the new one, not remembering what was
// told, keeps a restarted or new leader from telling it again.
func RolloutEvents(was, now *v1alpha1.RolloutStatus) []RolloutEvent {
	if now == nil {
		return nil
	}
	var out []RolloutEvent
	add := func(kind, reason, note string) {
		out = append(out, RolloutEvent{Type: kind, Reason: reason, Note: Bounded(note, maxEventNote)})
	}
	sameRollout := was != nil && same(was, now)
	if was != nil && !sameRollout && !rollout.Phase(was.Phase).Done() {
		add(corev1.EventTypeNormal, v1alpha1.ReasonRolloutSuperseded,
			fmt.Sprintf("commit %s (revision %s) supersedes the rollout of revision %s at step %d/%d", now.Commit, now.Revision, was.Revision, was.Step, was.Total))
	}
	if !rollout.Phase(now.Phase).Done() && (!sameRollout || was.Step != now.Step) {
		// Also when the status first shows the rollout paused at a later
		// step: a step whose gates passed before a status was written
		// is announced all the same.
		add(corev1.EventTypeNormal, EventRolloutStep, fmt.Sprintf("revision %s: step %d/%d started: %s", now.Revision, now.Step, now.Total, now.Message))
	}
	if sameRollout && was.Phase == now.Phase {
		return out
	}
	switch rollout.Phase(now.Phase) {
	case rollout.PhasePaused:
		kind := corev1.EventTypeNormal
		if strings.Contains(now.Message, "failed at") {
			kind = corev1.EventTypeWarning
		}
		add(kind, v1alpha1.ReasonRolloutPaused, fmt.Sprintf("revision %s: %s", now.Revision, now.Message))
	case rollout.PhaseSucceeded:
		of := now.Revision
		if now.Commit != "" {
			of += " (commit " + now.Commit + ")"
		}
		add(corev1.EventTypeNormal, v1alpha1.ReasonRolloutSucceeded, fmt.Sprintf("revision %s promoted to every proxy", of))
	case rollout.PhaseFailed:
		add(corev1.EventTypeWarning, v1alpha1.ReasonRolloutFailed, fmt.Sprintf("revision %s: %s", now.Revision, now.Message))
	case rollout.PhaseAborted:
		reason := v1alpha1.ReasonRolloutAborted
		if strings.Contains(now.Message, revisions.RolloutUnpublished) {
			reason = v1alpha1.ReasonRolloutSuperseded
		}
		add(corev1.EventTypeWarning, reason, fmt.Sprintf("revision %s: %s", now.Revision, now.Message))
	}
	return out
}

// same reports whether two statuses are of one rollout: of one commit
// (an EnvoySource's nodes each have a revision of their own), or of one
// revision when there is no commit (an EnvoyConfig's generations).
func same(a, b *v1alpha1.RolloutStatus) bool {
	if a.Commit != "" || b.Commit != "" {
		return a.Commit == b.Commit
	}
	return a.Revision == b.Revision
}
