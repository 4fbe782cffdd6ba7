package kubestore

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/legate-dev/legate/config/v1alpha1"
)

// Reasons of the conditions an EnvoyConfigRevision carries. MARIN3R's
// conditions say True with MARIN3R's own reasons (VersionPublished,
// ResourcesFailing) so that tools matching them keep working.
const (
	ReasonPublished        = "Published"
	ReasonSuperseded       = "Superseded"
	ReasonNotPublished     = "NotPublished"
	ReasonTainted          = "Tainted"
	ReasonRejected         = "Rejected"
	ReasonNotTainted       = "NotTainted"
	ReasonUntainted        = "Untainted"
	reasonMARIN3RPublished = "VersionPublished"
	reasonMARIN3RTainted   = "ResourcesFailing"
)

// maxConditionMessage bounds a condition's message (the API allows 32 KiB;
// the full rejection text stays in status.taint).
const maxConditionMessage = 1024

// setConditions writes the conditions of st (its published flag and taint)
// into st.Conditions, starting from the conditions the object had. A
// condition whose status is unchanged keeps its lastTransitionTime; now is
// the time of a transition; generation is the object's.
func setConditions(st *v1alpha1.EnvoyConfigRevisionStatus, previous []metav1.Condition, node string, generation int64, now metav1.Time) {
	conds := make([]metav1.Condition, len(previous))
	copy(conds, previous)

	published := metav1.Condition{
		Type: v1alpha1.ConditionPublished, Status: metav1.ConditionTrue, Reason: ReasonPublished,
		Message: fmt.Sprintf("served to the proxies of node %q", node),
	}
	switch {
	case st.Published:
	case st.Tainted:
		published.Status, published.Reason, published.Message = metav1.ConditionFalse, ReasonTainted, "proxies rejected it: it is not published again until the taint is cleared"
	case st.LastPublishedAt != nil:
		published.Status, published.Reason, published.Message = metav1.ConditionFalse, ReasonSuperseded, fmt.Sprintf("another revision of node %q is served", node)
	default:
		published.Status, published.Reason, published.Message = metav1.ConditionFalse, ReasonNotPublished, "not served yet"
	}

	tainted := metav1.Condition{Type: v1alpha1.ConditionTainted, Status: metav1.ConditionFalse, Reason: ReasonNotTainted, Message: "no rejection recorded"}
	if st.Tainted {
		msg := "proxies rejected it"
		if st.Taint != nil && st.Taint.Message != "" {
			msg = st.Taint.Message
		}
		tainted.Status, tainted.Reason, tainted.Message = metav1.ConditionTrue, ReasonRejected, truncate(msg, maxConditionMessage)
	} else if prev := meta.FindStatusCondition(previous, v1alpha1.ConditionTainted); prev != nil &&
		(prev.Status == metav1.ConditionTrue || prev.Reason == ReasonUntainted) {
		// Cleared: it says so until it is tainted again, across the
		// later writes of its published flag.
		tainted.Reason, tainted.Message = ReasonUntainted, "the taint was cleared"
	}

	marin3rPublished, marin3rTainted := published, tainted
	marin3rPublished.Type, marin3rTainted.Type = v1alpha1.MARIN3RRevisionPublished, v1alpha1.MARIN3RRevisionTainted
	if marin3rPublished.Status == metav1.ConditionTrue {
		marin3rPublished.Reason = reasonMARIN3RPublished
	}
	if marin3rTainted.Status == metav1.ConditionTrue {
		marin3rTainted.Reason = reasonMARIN3RTainted
	}

	for _, c := range []metav1.Condition{published, tainted, marin3rPublished, marin3rTainted} {
		c.ObservedGeneration, c.LastTransitionTime = generation, now
		meta.SetStatusCondition(&conds, c)
	}
	st.Conditions = conds
}

// truncate cuts s to at most n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
