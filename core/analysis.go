package core

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/rollout/analysis"
)

// AnalysisSpec decodes the analysis of a rollout policy as written (raw
// JSON; nil without one) and validates it, naming the field path of every
// error under where (e.g. "sources[0].rollout.analysis"). Unknown fields
// are refused: a misspelt failureLimit must not silently mean "no limit".
func AnalysisSpec(raw json.RawMessage, where string) (*analysis.Spec, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var spec analysis.Spec
	if err := dec.Decode(&spec); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if err := spec.Validate(where); err != nil {
		return nil, err
	}
	return &spec, nil
}

// Analyses is the rollout.Analyzer of a home: it runs the analysis of the
// policy of the subject's source with Argo Rollouts' semantics. An
// analysis that ends in Error (its checks could not be measured up to the
// consecutive-error limit) fails the step, as it aborts an Argo rollout:
// a candidate nobody could judge is not promoted. specs holds each
// source's validated analysis; a source without one passes.
type Analyses struct {
	Specs  map[string]*analysis.Spec
	Runner *analysis.Runner
}

// Analyze implements rollout.Analyzer.
func (a Analyses) Analyze(ctx context.Context, s rollout.Subject) (rollout.Verdict, string, error) {
	spec := a.Specs[s.Source]
	if spec == nil {
		return rollout.VerdictPass, "no analysis configured", nil
	}
	res := a.Runner.Run(ctx, *spec, analysis.Subject{
		Node: s.Node, Source: s.Source, Revision: s.Revision, Commit: s.Commit, Step: s.Step, Steps: s.Steps,
	})
	return verdictOf(res.Phase), res.Message, nil
}

// verdictOf maps an analysis phase to the rollout's verdict.
func verdictOf(p analysis.Phase) rollout.Verdict {
	switch p {
	case analysis.PhaseSuccessful:
		return rollout.VerdictPass
	case analysis.PhaseInconclusive:
		return rollout.VerdictInconclusive
	default: // Failed, Error, or a phase this build does not know
		return rollout.VerdictFail
	}
}
