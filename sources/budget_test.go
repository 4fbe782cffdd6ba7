package sources_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/sources"
)

func TestKept(t *testing.T) {
	for name, want := range map[string]bool{
		"edge.yaml": true, "nodes/a/x.yml": true, "xds.json": true, "policy/p.cue": true,
		"cue.mod/module.cue": true, "legate.yaml": true,
		"README.md": false, "blob.bin": false, "edge.yaml.gz": false, "yaml": false, "EDGE.YAML": false,
	} {
		assert.Equal(t, want, sources.Kept(name), name)
	}
}

// The per-source limit bounds one fetch, the total all sources; a fetch
// replaces its source's tree, which is not counted against it.
func TestBudget(t *testing.T) {
	b := sources.NewBudget(100, 250)

	a := b.Fetch("a")
	require.NoError(t, a.Add("a.yaml", 60))
	require.NoError(t, a.Add("b.yaml", 40))
	var le *sources.LimitError
	err := a.Add("c.yaml", 1)
	require.ErrorAs(t, err, &le)
	assert.Equal(t, &sources.LimitError{File: "c.yaml", Limit: 100}, le)
	assert.EqualError(t, err, "the configuration files (*.yaml, *.yml, *.json, *.cue) of this source exceed 100 bytes, the per-source limit (at c.yaml): point the source at a smaller directory or raise the limit")
	a.Keep()
	a.Drop() // deferred after Keep: nothing
	mine, all := b.Held("a")
	assert.Equal(t, [2]int64{100, 100}, [2]int64{mine, all})

	// Two fetches at once: the second sees what the first counts.
	bf, cf := b.Fetch("b"), b.Fetch("c")
	require.NoError(t, bf.Add("x.yaml", 100))
	require.NoError(t, cf.Add("x.yaml", 50))
	err = cf.Add("y.yaml", 1)
	require.ErrorAs(t, err, &le)
	assert.Equal(t, &sources.LimitError{File: "y.yaml", Limit: 250, AllSources: true, Others: 200}, le)
	assert.ErrorContains(t, err, "exceed 250 bytes, the limit across sources (at y.yaml; the other sources keep 200 bytes)")
	cf.Drop()
	bf.Keep()
	_, all = b.Held("")
	assert.EqualValues(t, 200, all, "the dropped fetch keeps nothing")

	// A source fetching anew is not blocked by the tree it replaces.
	again := b.Fetch("a")
	require.NoError(t, again.Add("a.yaml", 90))
	again.Keep()
	mine, all = b.Held("a")
	assert.Equal(t, [2]int64{90, 190}, [2]int64{mine, all})

	b.Release("b")
	_, all = b.Held("")
	assert.EqualValues(t, 90, all)
	c := b.Fetch("c")
	require.NoError(t, c.Add("big.yaml", 100))
	c.Keep()
	_, all = b.Held("")
	assert.EqualValues(t, 190, all)

	assert.ErrorAs(t, c.Add("neg", -1), &le, "a negative size is refused")
}

func TestNewBudgetDefaults(t *testing.T) {
	per, total := sources.NewBudget(0, 0).Limits()
	assert.Equal(t, [2]int64{sources.DefaultSourceBytes, sources.DefaultTotalBytes}, [2]int64{per, total})
	per, total = sources.NewBudget(64, 10).Limits()
	assert.Equal(t, [2]int64{64, 64}, [2]int64{per, total}, "the total is at least one source's")
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{12: "12 bytes", 1536: "1.5 KiB", 32 << 20: "32 MiB", 3 << 19: "1.5 MiB"} {
		assert.Equal(t, want, sources.Size(n))
	}
}
