// Package readiness translates where a source's nodes stand (the
// pipeline's status of its last sync, the engine's status of each node)
// into the Ready, Reconciling and Stalled conditions, the events and the
// diagnostics of the Kubernetes object that configures them. It is pure:
// the Kubernetes home reads the states and writes what it says.
package readiness

import (
	"fmt"
	"strings"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/pipeline"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/textbound"
)

// Reasons of the Ready condition beyond Flux's own (fluxmeta): what went
// wrong, in the words an author searches for.
const (
	ReasonSucceeded        = fluxmeta.SucceededReason
	ReasonValidationFailed = "ValidationFailed"
	ReasonConflict         = "NodeConflict"
	ReasonFetchFailed      = "FetchFailed"
	ReasonDigestMismatch   = "DigestMismatch"
	ReasonInvalidSpec      = "InvalidSpec"
	ReasonRollback         = "Rollback"
	ReasonRollbackFailed   = "RollbackFailed"
)

// Event reasons: what happened, once per change.
const (
	EventPublished  = "Published"
	EventRejected   = "Rejected"
	EventRolledBack = "RolledBack"
	EventConflict   = "NodeConflict"
	EventFailed     = "Failed"
)

// Verdict is where one node a source renders stands: the revision the
// source wants served (the newest from it) and what is served.
type Verdict struct {
	Node revisions.NodeStatus
	// Desired is the newest revision from the source, nil when the node
	// holds none.
	Desired *revisions.RevisionStatus
}

// VerdictOf is where node stands for source.
func VerdictOf(node revisions.NodeStatus, source string) Verdict {
	v := Verdict{Node: node}
	for i := range node.History {
		if node.History[i].Source == source {
			v.Desired = &node.History[i]
			break
		}
	}
	return v
}

// InSync is MARIN3R's meaning: the desired revision is what is served.
func (v Verdict) InSync() bool {
	return v.Desired != nil && v.Node.Published != nil && v.Node.Published.Hash == v.Desired.Hash
}

func (v Verdict) rolledBack() bool {
	return v.Node.State == revisions.StateRollback || v.Node.State == revisions.StateRollbackFailed
}

// Rejection is the proxies' text on the desired revision, if they
// rejected it.
func (v Verdict) Rejection() string {
	if v.Desired != nil && v.Desired.Taint != nil {
		return v.Desired.Taint.Message
	}
	return ""
}

// Conditions are the Ready, Reconciling and Stalled conditions of an object
// whose source had status st (nil when the fetch failed with fetchErr) and
// whose nodes stand as verdicts say.
type Conditions struct {
	ready, reconciling, stalled metav1.Condition
}

// Of decides an object's readiness at generation gen: a fetch
// that failed, a render rejected, a node conflict, an apply that failed,
// a node rolled back, a node waiting, then every node served, in that
// order of precedence. It is pure: both reconcilers write what it says.
func Of(gen int64, st *pipeline.Status, fetchReason string, fetchErr error, verdicts []Verdict) Conditions {
	r := Conditions{
		ready:       metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: gen},
		reconciling: metav1.Condition{Type: v1alpha1.ConditionReconciling, Status: metav1.ConditionFalse, Reason: fluxmeta.SucceededReason, ObservedGeneration: gen},
		stalled:     metav1.Condition{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionFalse, Reason: fluxmeta.SucceededReason, ObservedGeneration: gen},
	}
	notReady := func(reason, msg string) {
		r.ready.Status, r.ready.Reason, r.ready.Message = metav1.ConditionFalse, reason, msg
	}
	stall := func(reason, msg string) {
		notReady(reason, msg)
		r.stalled.Status, r.stalled.Reason, r.stalled.Message = metav1.ConditionTrue, reason, msg
	}
	progress := func(reason, msg string) {
		notReady(reason, msg)
		r.reconciling.Status, r.reconciling.Reason, r.reconciling.Message = metav1.ConditionTrue, reason, msg
	}
	var rolled, waiting []string
	synced := 0
	for _, v := range verdicts {
		switch {
		case v.rolledBack():
			rolled = append(rolled, fmt.Sprintf("node %s: %s (%s)", v.Node.NodeID, v.Rejection(), v.Node.State))
		case v.Node.Waiting != nil:
			waiting = append(waiting, fmt.Sprintf("node %s: %s", v.Node.NodeID, v.Node.Waiting.Message))
		case v.InSync():
			synced++
		}
	}
	switch {
	case fetchErr != nil && fetchReason == ReasonInvalidSpec:
		stall(fetchReason, fetchErr.Error())
	case fetchErr != nil:
		progress(fetchReason, fetchErr.Error())
		r.reconciling.Reason = fluxmeta.ProgressingWithRetryReason
	case st.Invalid:
		stall(ReasonValidationFailed, st.Summary())
	case len(st.Conflicts) > 0:
		stall(ReasonConflict, st.Summary())
	case len(st.ApplyErrors) > 0:
		progress(fluxmeta.FailedReason, st.Summary())
		r.reconciling.Reason = fluxmeta.ProgressingWithRetryReason
	case len(rolled) > 0:
		reason := ReasonRollback
		for _, v := range verdicts {
			if v.Node.State == revisions.StateRollbackFailed {
				reason = ReasonRollbackFailed
			}
		}
		stall(reason, "the proxies rejected the newest revision: "+strings.Join(rolled, "; "))
	case len(waiting) > 0:
		progress(fluxmeta.DependencyNotReadyReason, strings.Join(waiting, "; "))
	case synced == len(verdicts):
		r.ready.Status, r.ready.Reason, r.ready.Message = metav1.ConditionTrue, fluxmeta.SucceededReason, servedMessage(verdicts)
	default:
		progress(fluxmeta.ProgressingReason, "the configuration is on its way to the xDS server")
	}
	return r
}

// servedMessage says what is served, node by node (a few of them).
func servedMessage(verdicts []Verdict) string {
	if len(verdicts) == 0 {
		return "the source renders no node"
	}
	const most = 5
	parts := make([]string, 0, most)
	for i, v := range verdicts {
		if i == most {
			parts = append(parts, fmt.Sprintf("and %d more", len(verdicts)-most))
			break
		}
		parts = append(parts, fmt.Sprintf("revision %s is served to node %s (%s)", revisions.Short(v.Node.Published.Hash), v.Node.NodeID, v.Node.State))
	}
	return strings.Join(parts, "; ")
}

// Set sets the three conditions in conds, each message bounded.
func (r Conditions) Set(conds *[]metav1.Condition) {
	for _, c := range []metav1.Condition{r.ready, r.reconciling, r.stalled} {
		c.Message = Bounded(c.Message, MaxConditionMessage)
		meta.SetStatusCondition(conds, c)
	}
}

// MaxConditionMessage keeps a condition's message well under the API
// server's limit (32 768), so that a source with many failing nodes still
// gets its status written.
const MaxConditionMessage = 4096

// Bounded cuts s to at most n bytes, on a rune boundary, saying it did.
func Bounded(s string, n int) string { return textbound.Cut(s, n, " …(cut)") }

// maxDiagnostics is how many diagnostics a status lists, and
// maxDiagnosticText the longest each may be.
const (
	maxDiagnostics    = 10
	maxDiagnosticText = 1024
)

// maxEventNote is the longest note an events.k8s.io Event takes.
const maxEventNote = 1024

// EventOf is the event a change of the Ready condition from was to now
// deserves; ok is false when it deserves none (nothing changed, or work
// in progress).
func EventOf(was, now *metav1.Condition) (kind, reason, note string, ok bool) {
	if now == nil || (was != nil && was.Reason == now.Reason && was.Message == now.Message) {
		return "", "", "", false
	}
	switch now.Reason {
	case fluxmeta.SucceededReason:
		kind, reason = corev1.EventTypeNormal, EventPublished
	case ReasonValidationFailed:
		kind, reason = corev1.EventTypeWarning, EventRejected
	case ReasonRollback, ReasonRollbackFailed:
		kind, reason = corev1.EventTypeWarning, EventRolledBack
	case ReasonConflict:
		kind, reason = corev1.EventTypeWarning, EventConflict
	case ReasonFetchFailed, ReasonDigestMismatch, ReasonInvalidSpec, fluxmeta.FailedReason:
		kind, reason = corev1.EventTypeWarning, EventFailed
	default: // progress: the outcome gets its own event
		return "", "", "", false
	}
	return kind, reason, Bounded(now.Message, maxEventNote), true
}

// Diagnostics lists the first problems of a rejected render, each with
// its file:line from the repository root (the render read dir).
func Diagnostics(st pipeline.Status, dir string) []string {
	var out []string
	for _, d := range st.Diagnostics {
		if len(out) == maxDiagnostics {
			break
		}
		d.Pos = d.Pos.InDir(dir)
		out = append(out, Bounded(d.String(), maxDiagnosticText))
	}
	if extra := st.DiagnosticCount - len(out); extra > 0 && len(out) == maxDiagnostics {
		out = append(out, fmt.Sprintf("and %d more", extra))
	}
	if !st.Invalid {
		for _, p := range st.Problems() {
			if len(out) < maxDiagnostics {
				out = append(out, Bounded(p, maxDiagnosticText))
			}
		}
	}
	return out
}
