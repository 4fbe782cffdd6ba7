package statuspage

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/textbound"
)

// The rollouts as people read them, on the page and in `legate rollout
// status`: what the step is, who is on which side, what the rollout waits
// for and how long, or why it failed. One wording for both, computed here.

// maxShownRollouts bounds the rollouts listed on the page; the read API
// lists them all.
const maxShownRollouts = 50

// maxRolloutText bounds a proxy's or an analysis's text shown on the page
// and by the CLI: a NACK is the proxy's own words, of any length.
const maxRolloutText = 512

// RolloutWait says what a rollout waits for and why, or how it ended:
// "ACKs 7/10, 18s left", "soak, 12s left", "analysis running",
// "paused: waiting for `legate rollout promote`", or the failure with the
// step, the proxy and its text. now dates the time left.
func RolloutWait(v revisions.RolloutView, now time.Time) string {
	st := v.Status
	left := ""
	if v.Deadline != nil {
		left = ", " + HumanDuration(max(v.Deadline.Sub(now), 0)) + " left"
	}
	switch {
	case st.Phase == rollout.PhaseFailed:
		return "failed: " + RolloutFailure(v)
	case st.Phase == rollout.PhaseAborted:
		return "aborted: " + CleanText(cmp.Or(st.Message, "by a person"))
	case st.Phase == rollout.PhaseSucceeded:
		return "done: promoted to every proxy"
	case st.Failure != nil:
		// onFailure: pause keeps the canaries where they failed.
		return "paused after a failure, waiting for `legate rollout promote` or `abort`: " + RolloutFailure(v)
	case st.UserPaused:
		return "paused by a person: waiting for `legate rollout resume` or `promote`"
	case st.Phase == rollout.PhasePaused && v.NextGate == "promote" && lastGateInconclusive(st):
		return "paused: the analysis was inconclusive, waiting for `legate rollout promote` or `abort`: " + CleanText(st.Message)
	case st.Phase == rollout.PhasePaused:
		return "paused: waiting for `legate rollout promote`"
	}
	switch v.NextGate {
	case string(rollout.GateAck):
		return fmt.Sprintf("ACKs %d/%d%s", v.Acked, v.OnCandidate, left)
	case string(rollout.GateSoak):
		return "soak" + left + ": no NACK and no proxy restarting more than allowed"
	case string(rollout.GateAnalysis):
		return "analysis running" + analysisSoFar(st)
	case string(rollout.GatePause):
		return "pause" + left
	case string(rollout.GateNodes):
		return "waiting for the nodes this step takes"
	}
	return CleanText(st.Message)
}

// RolloutFailure names the failed step, the proxy and its text (or the
// analysis's), bounded.
func RolloutFailure(v revisions.RolloutView) string {
	f := v.Status.Failure
	if f == nil {
		return CleanText(v.Status.Message)
	}
	where := fmt.Sprintf("step %d/%d (%s)", f.Step, v.Status.Steps, f.Describe)
	if f.Proxy != "" {
		return where + ": proxy " + CleanText(f.Proxy) + " " + CleanText(f.Message)
	}
	return where + ": " + CleanText(f.Message)
}

// CleanText is text from outside legate (a proxy's NACK, an analysis's
// message) made fit for one line of a page or a terminal: control
// characters (a terminal's escape sequences among them) become spaces, and
// it is cut to maxRolloutText bytes. html/template escapes it on the page.
func CleanText(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return textbound.Cut(strings.TrimSpace(s), maxRolloutText, "…")
}

func lastGateInconclusive(st rollout.Status) bool {
	for _, g := range st.Gates {
		if g.Gate == rollout.GateAnalysis && !g.Passed {
			return true
		}
	}
	return false
}

// analysisSoFar is what earlier steps' analyses said: the verdicts of the
// current step's run are not in the status until it decides.
func analysisSoFar(st rollout.Status) string {
	for _, g := range slices.Backward(st.Gates) {
		if g.Gate == rollout.GateAnalysis && g.Message != "" {
			return " (last: " + CleanText(g.Message) + ")"
		}
	}
	return ""
}

// rolloutRow is one rollout on the page.
type rolloutRow struct {
	Node, Phase, Class string
	// Step is "step 2/5 (10% of proxies)"; Side the proxies on each side.
	Step, Side string
	// Wait says what it waits for or how it ended.
	Wait                 string
	Candidate, Stable    string
	Commit               link
	Superseded           string
	Problem, Over, Right bool
}

// rolloutRank orders the rollouts for the page: those that need a person
// first, then those that move, then the ended ones.
func rolloutRank(v revisions.RolloutView) int {
	switch {
	case v.Status.Phase == rollout.PhaseFailed:
		return 0
	case v.Status.Phase == rollout.PhasePaused || v.Status.UserPaused:
		return 1
	case v.Status.Phase == rollout.PhaseProgressing:
		return 2
	case v.Status.Phase == rollout.PhaseAborted:
		return 3
	}
	return 4
}

// rolloutRows builds the page's rollouts, the most urgent first, at most
// maxShownRollouts of them; more says how many were left out.
func rolloutRows(views []revisions.RolloutView, srcURL map[string]string, forges map[string]forge.Provider, now time.Time) (rows []rolloutRow, more int) {
	views = slices.Clone(views)
	slices.SortStableFunc(views, func(a, b revisions.RolloutView) int {
		return cmp.Or(cmp.Compare(rolloutRank(a), rolloutRank(b)), cmp.Compare(a.Node, b.Node))
	})
	if len(views) > maxShownRollouts {
		more = len(views) - maxShownRollouts
		views = views[:maxShownRollouts]
	}
	for _, v := range views {
		st := v.Status
		r := rolloutRow{
			Node: v.Node, Phase: string(st.Phase), Step: cmp.Or(v.Step, fmt.Sprintf("step %d/%d", min(st.Step+1, st.Steps), st.Steps)),
			Side:      fmt.Sprintf("%d on the new revision, %d on the old", v.OnCandidate, v.OnStable),
			Wait:      RolloutWait(v, now),
			Candidate: revisions.Short(st.Candidate), Stable: revisions.Short(st.Stable),
			Superseded: revisions.Short(st.Superseded),
			Over:       st.Phase.Done(),
		}
		if st.UserPaused && st.Phase == rollout.PhaseProgressing {
			r.Phase = string(rollout.PhasePaused)
		}
		if st.Phase == rollout.PhaseSucceeded {
			r.Step = fmt.Sprintf("all %d steps", st.Steps)
		}
		switch {
		case st.Phase == rollout.PhaseFailed || st.Failure != nil:
			r.Class, r.Problem = "bad", true
		case st.Phase == rollout.PhaseSucceeded:
			r.Class = "ok"
		case st.Phase == rollout.PhaseAborted:
			r.Class = "grey"
		default:
			r.Class = "warn"
		}
		if st.Commit != "" {
			r.Commit = link{Text: revisions.Short(st.Commit), Title: st.Commit, Href: commitURL(srcURL[v.Source], forges[v.Source], st.Commit)}
		}
		rows = append(rows, r)
	}
	return rows, more
}

// rolloutLine is the rollout on its node's card, in one line.
func rolloutLine(r rolloutRow) string {
	if r.Over {
		return strings.ToLower(r.Phase) + ": " + r.Wait
	}
	return r.Step + "; " + r.Side + "; " + r.Wait
}
