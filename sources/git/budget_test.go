package git

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/sources"
)

// A snapshot keeps only the files the renderer reads, counted against the
// source's budget: bulk beside the configuration is never read, and
// configuration over the budget is refused naming the file and the limit.
func TestSnapshotKeepsOnlyWhatTheRendererReads(t *testing.T) {
	repo := newTestRepo(t)
	repo.commit("one", map[string]string{
		"cfg/edge.yaml": "a: 1\n", "cfg/policy/p.cue": "package p\n",
		"cfg/README.md": "docs\n", "cfg/blob.bin": strings.Repeat("x", 64<<10),
	})
	budget := sources.NewBudget(1024, 1024)
	res, err := mustNew(t, Config{Name: "envoysource/team-a/cfg", URL: repo.dir, Path: "cfg", Budget: budget}).Fetch(context.Background())
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"edge.yaml": "a: 1\n", "policy/p.cue": "package p\n"}, readAll(t, res.Files))
	mine, _ := budget.Held("envoysource/team-a/cfg")
	assert.EqualValues(t, len("a: 1\n")+len("package p\n"), mine)

	repo.commit("two", map[string]string{"cfg/big.yaml": strings.Repeat("y", 2048)})
	_, err = mustNew(t, Config{Name: "other", URL: repo.dir, Path: "cfg", Budget: budget}).Fetch(context.Background())
	var le *sources.LimitError
	require.ErrorAs(t, err, &le)
	assert.ErrorContains(t, err, "exceed 1.0 KiB, the per-source limit (at cfg/big.yaml)")
	_, all := budget.Held("")
	assert.Equal(t, mine, all, "a refused fetch keeps nothing")
}
