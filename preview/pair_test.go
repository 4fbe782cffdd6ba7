package preview

import (
	"io/fs"
	"maps"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
)

func renderDefault(f fs.FS) *render.Result { return render.Render(f, render.Options{}) }

// comparePair checks that RenderPair gives exactly the report of two full
// renders, and returns how it rendered.
func comparePair(t *testing.T, base, head fstest.MapFS) Pair {
	t.Helper()
	want := Compare(FleetOf(renderDefault(base)), FleetOf(renderDefault(head)), Options{})
	b, h, pair := RenderPair(base, head, render.Options{}, renderDefault)
	got := Compare(b, h, Options{})
	assert.Equal(t, want, got, "the report of two full renders")
	if !b.invalid() && !want.Invalid {
		full := renderDefault(base)
		require.Len(t, b.Nodes, len(full.Nodes))
		for n, nc := range full.Nodes {
			assert.Equal(t, nc.Hash, b.Nodes[n].Hash, "node %s of the base", n)
		}
	}
	return pair
}

func (f Fleet) invalid() bool { return len(f.Diagnostics) > 0 }

// Node directories alone: the unchanged nodes are rendered once, the base
// renders only its changed, removed and renamed nodes, and the report is
// that of two full renders.
func TestRenderPairSharesUnchangedNodes(t *testing.T) {
	base := benchFleetRepo(40, 0)
	head := benchFleetRepo(40, 3)
	withQuickstart(head, "added")
	for p := range maps.Keys(head) {
		if nodeOfPath(p) == "node-0039" {
			delete(head, p) // node-0039 removed
		}
	}
	pair := comparePair(t, base, head)
	assert.True(t, pair.Shared, pair.Why)
	assert.Equal(t, 4, pair.BaseRendered, "the 3 changed nodes and the removed one")

	// Most nodes changed: the base renders in full.
	pair = comparePair(t, base, benchFleetRepo(40, 21))
	assert.False(t, pair.Shared)
	assert.Equal(t, "most nodes changed", pair.Why)

	// Nothing changed: the base renders nothing.
	pair = comparePair(t, base, benchFleetRepo(40, 0))
	assert.True(t, pair.Shared, pair.Why)
	assert.Zero(t, pair.BaseRendered)
}

// A base whose changed node does not render is invalid, as with a full
// render.
func TestRenderPairInvalidBase(t *testing.T) {
	base := benchFleetRepo(10, 0)
	base["nodes/node-0002/more.yaml"] = &fstest.MapFile{Data: []byte("resources:\n- \"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\n  name: x\n  connect_timeout: soon\n")}
	pair := comparePair(t, base, benchFleetRepo(10, 0))
	assert.True(t, pair.Shared, pair.Why)
	assert.Equal(t, 1, pair.BaseRendered)
}

// Where a node's configuration may depend on more than its own files,
// both sides are rendered in full, and the report is the same.
func TestRenderPairFallsBack(t *testing.T) {
	envoyConfig := func(node string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte(`apiVersion: marin3r.3scale.net/v1alpha1
kind: EnvoyConfig
metadata: {name: ` + node + `}
spec:
  nodeID: ` + node + `
  resources:
  - type: cluster
    value: {name: extra, type: STATIC, connect_timeout: 1s}
`)}
	}
	for name, tt := range map[string]struct {
		edit func(base, head fstest.MapFS)
		why  string
	}{
		"a file outside node directories": {func(_, h fstest.MapFS) { h["edge.yaml"] = envoyConfig("node-0001") }, "edge.yaml is in no nodes/<nodeID>/ directory"},
		"a legate.yaml": {func(_, h fstest.MapFS) {
			h["nodes/legate.yaml"] = &fstest.MapFile{Data: []byte("nodes: [node-0001]\n")}
		}, "nodes/legate.yaml targets nodes"},
		"a CUE file": {func(b, _ fstest.MapFS) { b["policies/p.cue"] = &fstest.MapFile{Data: []byte("package p\n")} }, "policies/p.cue is CUE"},
		// A node directory whose document names another node: that
		// node's configuration depends on a file outside its directory.
		"a document naming another node": {func(_, h fstest.MapFS) { h["nodes/node-0002/other.yaml"] = envoyConfig("node-0003") }, ""},
	} {
		t.Run(name, func(t *testing.T) {
			base, head := benchFleetRepo(6, 0), benchFleetRepo(6, 2)
			tt.edit(base, head)
			pair := comparePair(t, base, head)
			assert.False(t, pair.Shared)
			assert.Contains(t, pair.Why, tt.why)
		})
	}
}
