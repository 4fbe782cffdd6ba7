package kuberollout

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/rollout"
)

// Engine is what the rollouts of a source are read and commanded through
// (*revisions.Engine).
type Engine interface {
	Rollout(node string) (revisions.RolloutView, bool)
	RolloutCommand(ctx context.Context, node string, cmd rollout.Command) (rollout.Status, error)
}

// Views are the rollouts of those of nodes that source owns: nothing of a
// node another namespace serves reaches a status.
func Views(e Engine, source string, nodes []string) []revisions.RolloutView {
	var out []revisions.RolloutView
	for _, id := range nodes {
		if v, ok := e.Rollout(id); ok && v.Source == source {
			out = append(out, v)
		}
	}
	return out
}

// Outcome is what a legate.dev/rollout command came to: the nodes it was
// carried out on, and why it was not elsewhere (for a Warning event).
type Outcome struct {
	Done     []string
	Warnings []string
}

// Command carries out cmd, the legate.dev/rollout annotation of the object
// source stands for, on the rollout under way at each of nodes that source
// owns (owner says who owns a node). A command that cannot be carried out
// (unknown, no rollout of this object's under way) comes back as a
// warning: refusal when none of nodes is this object's, worded by the
// caller so that it says nothing of whether another namespace serves them.
// It returns revisions.ErrNotLeader when this replica does not decide (the
// leader will do it); other errors of the engine are warnings.
func Command(ctx context.Context, e Engine, owner func(node string) string, source string, nodes []string, cmd, refusal string) (Outcome, error) {
	var out Outcome
	switch c := rollout.Command(cmd); c {
	case rollout.CommandPromote, rollout.CommandPause, rollout.CommandResume, rollout.CommandAbort:
		owned := slices.DeleteFunc(slices.Clone(nodes), func(id string) bool { return owner(id) != source })
		if len(owned) == 0 {
			out.Warnings = append(out.Warnings, refusal)
			break
		}
		for _, v := range Views(e, source, owned) {
			if v.Status.Phase.Done() && len(owned) > 1 {
				continue // an EnvoySource's node this commit left alone
			}
			if _, err := e.RolloutCommand(ctx, v.Node, c); err != nil {
				if errors.Is(err, revisions.ErrNotLeader) {
					return Outcome{}, err
				}
				out.Warnings = append(out.Warnings, err.Error())
				continue
			}
			out.Done = append(out.Done, v.Node)
		}
		if len(out.Done) == 0 && len(out.Warnings) == 0 {
			out.Warnings = append(out.Warnings, "no rollout is under way")
		}
	default:
		out.Warnings = append(out.Warnings, fmt.Sprintf("%q is not promote, pause, resume or abort", cmd))
	}
	return out, nil
}
