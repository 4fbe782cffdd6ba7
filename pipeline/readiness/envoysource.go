package readiness

import (
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/pipeline"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/sources"
)

// SourceVerdicts are the verdicts of the nodes a source's sync applied
// (none when it synced nothing or its content was invalid), from the
// engine's status of each (node: revisions.Engine.Node).
func SourceVerdicts(synced *pipeline.Status, source string, node func(id string) (revisions.NodeStatus, bool)) []Verdict {
	var out []Verdict
	if synced != nil && !synced.Invalid {
		for _, id := range synced.Nodes {
			st, _ := node(id)
			out = append(out, VerdictOf(st, source))
		}
	}
	return out
}

// EnvoySourceStatus fills what one pass over es says in its status s: what
// was fetched (res) and synced (synced; nil when the fetch failed with
// fetchErr, whose Ready reason is reason), and Ready and Reconciling from
// them and the verdicts of the source's nodes (SourceVerdicts). What the
// pass did not learn (the nodes of a failed fetch) stays as it was.
func EnvoySourceStatus(s *v1alpha1.EnvoySourceStatus, es *v1alpha1.EnvoySource, res *sources.Result, synced *pipeline.Status, reason string, fetchErr error, verdicts []Verdict) {
	if synced != nil {
		s.LastAttemptedRevision = res.Origin.Revision()
		s.LastAppliedRevision = synced.AppliedRevision
		s.Nodes = synced.Nodes
		s.Diagnostics = Diagnostics(*synced, res.Origin.Path)
		if es.Spec.SourceRef != nil {
			s.ArtifactDigest = res.Origin.Digest
		}
	}
	Of(es.Generation, synced, reason, fetchErr, verdicts).Set(&s.Conditions)
}

// EqualSourceStatus reports whether two statuses of an EnvoySource say
// the same, ignoring when their conditions last changed.
func EqualSourceStatus(a, b *v1alpha1.EnvoySourceStatus) bool {
	x, y := *a, *b
	x.Conditions, y.Conditions = WithoutTransitions(x.Conditions), WithoutTransitions(y.Conditions)
	return equality.Semantic.DeepEqual(x, y)
}
