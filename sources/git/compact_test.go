package git

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestToMergeKeepsAGeometricProgression(t *testing.T) {
	packs := func(sizes ...int64) []packInfo {
		var ps []packInfo
		for i, s := range sizes {
			ps = append(ps, packInfo{hash: plumbing.NewHash(fmt.Sprintf("%040x", i+1)), size: s})
		}
		return ps
	}
	sizes := func(ps []packInfo) []int64 {
		var out []int64
		for _, p := range ps {
			out = append(out, p.size)
		}
		return out
	}
	for _, tt := range []struct {
		name  string
		packs []packInfo
		max   int64
		want  []int64
	}{
		{"one pack", packs(100), 1 << 20, nil},
		{"already geometric", packs(1000, 1, 2, 4, 8, 100), 1 << 20, nil},
		{"small packs beside the clone", packs(1_000_000, 10, 12, 11, 9), 1 << 30, []int64{9, 10, 11, 12}},
		{"a merged pack joins once the new ones outweigh half of it", packs(1_000_000, 40, 10, 12, 11), 1 << 30, []int64{10, 11, 12, 40}},
		{"stops at a pack twice the rest", packs(1_000_000, 100, 10, 12), 1 << 30, []int64{10, 12}},
		{"bounded by bytes", packs(1_000_000, 10, 12, 11, 9), 30, []int64{9, 10, 11}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, sizes(toMerge(tt.packs, tt.max)))
		})
	}
}

// Many fetches leave a bounded number of packs, and the merged clone
// still holds every commit: a new Source on the same state directory reads
// it without fetching again.
func TestPacksStayFewOverManyFetches(t *testing.T) {
	repo := newTestRepo(t)
	repo.commit("first", map[string]string{"cfg/a.yaml": "0", "cfg/b.yaml": "b"})
	state := t.TempDir()
	src := mustNew(t, Config{URL: repo.dir, Path: "cfg", StateDir: state})
	packs := func() int {
		ents, err := os.ReadDir(filepath.Join(src.Dir(), "objects", "pack"))
		require.NoError(t, err)
		n := 0
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".pack") {
				n++
			}
		}
		return n
	}
	most := 0
	var last string
	for i := range 2*compactAbove + 3 {
		last = repo.commit("next", map[string]string{"cfg/a.yaml": fmt.Sprint(i)})
		res, err := src.Fetch(context.Background())
		require.NoError(t, err)
		require.Equal(t, fmt.Sprint(i), readAll(t, res.Files)["a.yaml"])
		most = max(most, packs())
	}
	assert.LessOrEqual(t, most, compactAbove, "packs are merged once there are more than %d", compactAbove)
	assert.Less(t, packs(), compactAbove)

	again := mustNew(t, Config{URL: repo.dir, Path: "cfg", StateDir: state})
	res, err := again.Fetch(context.Background())
	require.NoError(t, err)
	assert.Equal(t, last, res.Origin.Commit)
	assert.Equal(t, "b", readAll(t, res.Files)["b.yaml"])
	// Every commit, tree and blob survived the merges.
	commits, err := again.c.repo.Log(&gogit.LogOptions{From: plumbing.NewHash(last)})
	require.NoError(t, err)
	n := 0
	require.NoError(t, commits.ForEach(func(c *object.Commit) error {
		n++
		_, err := c.Tree()
		return err
	}))
	assert.Equal(t, 2*compactAbove+4, n)
}
