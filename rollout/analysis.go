package rollout

import "context"

// Verdict is the result of one analysis of a rollout step.
type Verdict string

// The verdicts, with Argo Rollouts' meaning: Pass lets the rollout go to
// its next step, Fail fails it (rollback or pause, per OnFailure), and
// Inconclusive pauses it for a person to decide (promote or abort).
const (
	VerdictPass         Verdict = "Pass"
	VerdictFail         Verdict = "Fail"
	VerdictInconclusive Verdict = "Inconclusive"
)

// Subject is what an analysis judges: one node's candidate revision at one
// step of its rollout.
type Subject struct {
	// Node is the node ID.
	Node string `json:"node"`
	// Source is the source that owns the node.
	Source string `json:"source,omitempty"`
	// Revision is the candidate's content hash.
	Revision string `json:"revision"`
	// Commit is the commit (or digest) the candidate came from.
	Commit string `json:"commit,omitempty"`
	// Step is the step being judged, counted from 1; Steps is how many
	// the policy has.
	Step  int `json:"step"`
	Steps int `json:"steps"`
}

// Analyzer judges a rollout step. Analyze runs the whole analysis of the
// step (its interval, count and limits) and returns its verdict with a
// one-line reason for people; an error means the analysis could not be
// run at all and counts as Inconclusive. The engine calls it outside its
// locks, for different nodes concurrently, and cancels ctx when the
// rollout moves on without it (superseded, aborted). Implementations must
// be safe for concurrent use.
type Analyzer interface {
	Analyze(ctx context.Context, s Subject) (Verdict, string, error)
}

// AnalyzerFunc adapts a function to Analyzer.
type AnalyzerFunc func(ctx context.Context, s Subject) (Verdict, string, error)

// Analyze calls f.
func (f AnalyzerFunc) Analyze(ctx context.Context, s Subject) (Verdict, string, error) {
	return f(ctx, s)
}
