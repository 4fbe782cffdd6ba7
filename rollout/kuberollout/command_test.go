package kuberollout

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/rollout"
)

// engine is a table's engine: the rollouts of its nodes, and what a
// command on a node answers (nil: carried out).
type engine struct {
	views    map[string]revisions.RolloutView
	answers  map[string]error
	commands []string
}

func (e *engine) Rollout(node string) (revisions.RolloutView, bool) {
	v, ok := e.views[node]
	return v, ok
}

func (e *engine) RolloutCommand(_ context.Context, node string, cmd rollout.Command) (rollout.Status, error) {
	if err := e.answers[node]; err != nil {
		return rollout.Status{}, err
	}
	e.commands = append(e.commands, node+"="+string(cmd))
	return rollout.Status{}, nil
}

func view(node, source string, phase rollout.Phase) revisions.RolloutView {
	return revisions.RolloutView{Node: node, Source: source, Status: rollout.Status{Phase: phase}}
}

// A command reaches only the rollouts of the nodes the object's source
// owns; what it cannot do comes back as a warning, and a follower leaves
// the command to the leader.
func TestCommand(t *testing.T) {
	const mine, theirs = "envoysource/team-a/config", "envoyconfig/team-b/edge"
	owners := map[string]string{"a": mine, "b": mine, "c": theirs, "d": mine}
	views := map[string]revisions.RolloutView{
		"a": view("a", mine, rollout.PhaseProgressing),
		"b": view("b", mine, rollout.PhaseSucceeded),
		"c": view("c", theirs, rollout.PhaseProgressing),
	}
	for _, tc := range []struct {
		name         string
		nodes        []string
		cmd          string
		answers      map[string]error
		wantCommands []string
		want         Outcome
		wantErr      error
	}{
		{name: "promote the node under way", nodes: []string{"a"}, cmd: "promote", wantCommands: []string{"a=promote"}, want: Outcome{Done: []string{"a"}}},
		{
			name: "an ended rollout of a source with several nodes is left alone", nodes: []string{"a", "b"}, cmd: "pause",
			wantCommands: []string{"a=pause"}, want: Outcome{Done: []string{"a"}},
		},
		{
			name: "an ended rollout of one node answers for itself", nodes: []string{"b"}, cmd: "abort",
			wantCommands: []string{"b=abort"}, want: Outcome{Done: []string{"b"}},
		},
		{name: "another namespace's node gets the caller's refusal", nodes: []string{"c"}, cmd: "promote", want: Outcome{Warnings: []string{"refused"}}},
		{name: "an unknown command", nodes: []string{"a"}, cmd: "rollback", want: Outcome{Warnings: []string{`"rollback" is not promote, pause, resume or abort`}}},
		{name: "no rollout under way", nodes: []string{"d"}, cmd: "resume", want: Outcome{Warnings: []string{"no rollout is under way"}}},
		{
			name: "the engine's refusal is a warning", nodes: []string{"a"}, cmd: "resume", answers: map[string]error{"a": errors.New("node a: the rollout is not paused")},
			want: Outcome{Warnings: []string{"node a: the rollout is not paused"}},
		},
		{name: "a follower leaves it to the leader", nodes: []string{"a"}, cmd: "promote", answers: map[string]error{"a": revisions.ErrNotLeader}, wantErr: revisions.ErrNotLeader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &engine{views: views, answers: tc.answers}
			got, err := Command(context.Background(), e, func(n string) string { return owners[n] }, mine, tc.nodes, tc.cmd, "refused")
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantCommands, e.commands)
		})
	}
}

// Views leave out the rollouts of nodes another source holds.
func TestViewsOfOneSource(t *testing.T) {
	e := &engine{views: map[string]revisions.RolloutView{
		"a": view("a", "envoysource/team-a/config", rollout.PhaseProgressing),
		"c": view("c", "envoyconfig/team-b/edge", rollout.PhaseProgressing),
	}}
	got := Views(e, "envoysource/team-a/config", []string{"a", "c", "missing"})
	require.Len(t, got, 1)
	assert.Equal(t, "a", got[0].Node)
}
