package cue

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
)

func renderDir(t *testing.T, dir string) *render.Result {
	t.Helper()
	s := New()
	return render.Render(os.DirFS(dir), render.Options{Generators: []render.Generator{s}, Checks: []render.Check{s}})
}

// TestCUEFleetMatchesYAML renders examples/cue-fleet (three nodes from one
// CUE definition) and the same configuration written as YAML: the node
// hashes must be equal, and the CUE resources must point into fleet.cue.
func TestCUEFleetMatchesYAML(t *testing.T) {
	fromCUE := renderDir(t, "../../examples/cue-fleet")
	require.Empty(t, diagLines(fromCUE.Diagnostics))
	fromYAML := renderDir(t, "testdata/cue/fleet-yaml")
	require.Empty(t, diagLines(fromYAML.Diagnostics))

	require.Len(t, fromCUE.Nodes, 3)
	for id, want := range fromYAML.Nodes {
		got := fromCUE.Nodes[id]
		require.NotNil(t, got, "node %s missing from the CUE render", id)
		assert.Equal(t, want.Hash, got.Hash, "node %s", id)
		for url, ts := range got.Types {
			for _, r := range ts.Resources {
				assert.Equal(t, "fleet/fleet.cue", r.Source.File, "%s %s", url, r.Name)
				assert.Positive(t, r.Source.Line)
			}
		}
	}
	assert.NotEqual(t, fromCUE.Nodes["edge-eu"].Hash, fromCUE.Nodes["edge-us"].Hash)
}

// TestCUEErrorsGolden renders CUE packages that are each wrong in one way:
// a value the proto path rejects, a dangling reference, a schema error
// found while CUE evaluates, a value that is not concrete, and a helper
// field that is not a document. Every diagnostic names the .cue file, line
// and column.
func TestCUEErrorsGolden(t *testing.T) {
	res := renderDir(t, "testdata/cue/errors")
	all := append(res.Diagnostics, res.Warnings...)
	got := diagLines(all)
	for _, d := range all {
		assert.True(t, strings.HasSuffix(d.Pos.File, ".cue"), "%s", d)
		assert.Positive(t, d.Pos.Line, "%s", d)
	}
	golden := filepath.Join("testdata", "cue-errors.golden")
	if *update {
		require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), got)
}

func TestCUEInput(t *testing.T) {
	const cluster = `
	"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	name: "api"
	connect_timeout: "1s"
`
	tests := []struct {
		name  string
		files map[string]string
		// nodes are the node IDs rendered, when valid.
		nodes []string
		diag  string
	}{
		{
			name: "legate.yaml targets the package's nodes",
			files: map[string]string{
				"team/legate.yaml": "nodeIDs: [a, b]\n",
				"team/c.cue":       "package team\ncluster: {" + cluster + "}\n",
			},
			nodes: []string{"a", "b"},
		},
		{
			name: "EnvoyConfig values name their node",
			files: map[string]string{
				"configs.cue": `package configs
configs: [for id in ["x", "y"] {
	apiVersion: "legate.dev/v1alpha1", kind: "EnvoyConfig"
	metadata: name: id
	spec: {nodeID: id, resources: [{type: "cluster", value: {name: "api", connect_timeout: "1s"}}]}
}]
`,
			},
			nodes: []string{"x", "y"},
		},
		{
			name: "struct of documents and package files in one directory",
			files: map[string]string{
				"nodes/edge/a.cue": "package edge\n#timeout: \"2s\"\nclusters: api: {" + cluster + "}\n",
				"nodes/edge/b.cue": "package edge\nclusters: web: {\"@type\": \"type.googleapis.com/envoy.config.cluster.v3.Cluster\", name: \"web\", connect_timeout: #timeout}\n",
			},
			nodes: []string{"edge"},
		},
		{
			name: "policy/ is not configuration",
			files: map[string]string{
				"nodes/edge/c.cue": "package edge\ncluster: {" + cluster + "}\n",
				"policy/p.cue":     "cluster: connect_timeout: <=5\n",
			},
			nodes: []string{"edge"},
		},
		{
			name:  "unknown schema definition",
			files: map[string]string{"nodes/edge/c.cue": "package edge\nimport \"legate.dev/envoy\"\ncluster: envoy.#Clustr & {name: \"a\"}\n"},
			diag:  `nodes/edge/c.cue:3:10: envoy.#Clustr: no message type named "Clustr" is registered`,
		},
		{
			name:  "syntax error",
			files: map[string]string{"nodes/edge/c.cue": "package edge\ncluster: {\n"},
			diag:  "nodes/edge/c.cue:2:12: expected '}', found 'EOF'",
		},
		{
			name:  "no network for module dependencies",
			files: map[string]string{"nodes/edge/c.cue": "package edge\nimport \"example.com/lib\"\nx: lib.y\n"},
			diag:  "nodes/edge/c.cue:2:8",
		},
		{
			name: "conflict across files",
			files: map[string]string{
				"nodes/edge/a.cue": "package edge\ncluster: {" + cluster + "}\n",
				"nodes/edge/b.cue": "package edge\ncluster: name: \"web\"\n",
			},
			diag: `nodes/edge/a.cue:4:8: cluster.name: conflicting values "web" and "api"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, data := range tt.files {
				fsys[name] = &fstest.MapFile{Data: []byte(data)}
			}
			res := renderWithStage(fsys)
			if tt.diag != "" {
				assert.Contains(t, diagLines(res.Diagnostics), tt.diag)
				return
			}
			require.Empty(t, diagLines(res.Diagnostics))
			var got []string
			for id := range res.Nodes {
				got = append(got, id)
			}
			assert.ElementsMatch(t, tt.nodes, got)
		})
	}
}
