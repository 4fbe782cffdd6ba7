package nodestate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/legate-dev/legate/revisions"
)

func TestOf(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   Input
		want State
	}{
		{"served and accepted", Input{Engine: revisions.StateInSync}, InSync},
		{"no proxy answered yet", Input{Engine: revisions.StatePending}, Pending},
		{"nothing in the engine yet", Input{}, Pending},
		{"a rejected newest commit is never hidden behind InSync", Input{Engine: revisions.StateInSync, NewestRejected: true}, Rejected},
		{"nor behind Pending (the YAML tab)", Input{Engine: revisions.StatePending, NewestRejected: true}, Rejected},
		{"nor behind Degraded", Input{Engine: revisions.StateDegraded, NewestRejected: true}, Rejected},
		{"a rollback outranks it", Input{Engine: revisions.StateRollback, NewestRejected: true}, Rollback},
		{"so does a failed rollback", Input{Engine: revisions.StateRollbackFailed, NewestRejected: true}, RollbackFailed},
		{"degraded", Input{Engine: revisions.StateDegraded}, Degraded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Of(tt.in))
		})
	}
}

func TestEveryStateIsDefinedAndRanked(t *testing.T) {
	for _, s := range []State{InSync, Pending, Degraded, Rollback, RollbackFailed, Rejected, Unconfigured} {
		assert.NotEmpty(t, MeaningOf(s), s)
		assert.Less(t, Rank(s), len(Meanings), s)
	}
	assert.Less(t, Rank(Rejected), Rank(InSync), "problems sort first")
	assert.Less(t, Rank(Rollback), Rank(Pending))
	assert.False(t, Problem(InSync))
	assert.False(t, Problem(Pending))
	assert.True(t, Problem(Rejected))
	assert.True(t, Problem(Unconfigured))
}

func TestCountsIncludeRejectionsProblemsFirst(t *testing.T) {
	assert.Equal(t, "1 newest commit rejected · 2 in sync", Counts([]State{InSync, Rejected, InSync}))
	assert.Equal(t, "1 rolled back · 1 unconfigured · 1 pending", Counts([]State{Pending, Unconfigured, Rollback}))
	assert.Empty(t, Counts(nil))
}

func TestClosest(t *testing.T) {
	configured := []string{"edge", "edge-eu", "ingress", "egress", "api-gateway"}
	assert.Equal(t, []string{"edge"}, Closest("egde", configured, 3), "a swap is two edits")
	assert.Equal(t, []string{"edge-eu", "edge"}, Closest("edge-e", configured, 3), "nearest first")
	assert.Equal(t, []string{"egress", "ingress"}, Closest("igress", configured, 3), "ties in name order")
	assert.Equal(t, []string{"egress"}, Closest("igress", configured, 1), "at most n")
	assert.Empty(t, Closest("payments", configured, 3), "no far-fetched hint")
	assert.Empty(t, Closest("edge", []string{"edge"}, 3), "not itself")
	long := strings.Repeat("é", 10_000)
	assert.Equal(t, []string{long + "x"}, Closest(long, []string{long + "x"}, 3), "long IDs are compared on a bounded prefix")
}
