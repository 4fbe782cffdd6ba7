package cue

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
)

var update = flag.Bool("update", false, "rewrite golden files")

// exampleTree is examples/policy with the files of dir (relative to
// testdata) laid over it; files mapped to nil are removed.
func exampleTree(t *testing.T, dir string, override map[string]string) fstest.MapFS {
	t.Helper()
	fsys := fstest.MapFS{}
	load := func(root string) {
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			fsys[filepath.ToSlash(rel)] = &fstest.MapFile{Data: data}
			return nil
		})
		require.NoError(t, err)
	}
	load("../../examples/policy")
	if dir != "" {
		for name := range fsys {
			if strings.HasPrefix(name, "nodes/") {
				delete(fsys, name)
			}
		}
		load(filepath.Join("testdata", dir))
	}
	for name, data := range override {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return fsys
}

func renderWithStage(fsys fstest.MapFS) *render.Result {
	s := New()
	return render.Render(fsys, render.Options{Generators: []render.Generator{s}, Checks: []render.Check{s}})
}

func diagLines(ds []render.Diagnostic) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.String())
		b.WriteByte('\n')
	}
	return b.String()
}

func TestExamplePolicyPasses(t *testing.T) {
	res := renderWithStage(exampleTree(t, "", nil))
	require.Empty(t, diagLines(res.Diagnostics))
	assert.Contains(t, res.Nodes, "edge")
}

func TestPolicyViolationsGolden(t *testing.T) {
	res := renderWithStage(exampleTree(t, "violations", nil))
	got := diagLines(res.Diagnostics)
	golden := filepath.Join("testdata", "violations.golden")
	if *update {
		require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), got)
}

// TestExampleRules breaks one example rule at a time in the compliant
// example and checks that exactly that rule fires, at the config's line and
// the policy's line.
func TestExampleRules(t *testing.T) {
	example := exampleTree(t, "", nil)
	read := func(name string) string { return string(example[name].Data) }
	tests := []struct {
		name     string
		file     string
		from, to string
		want     string
	}{
		{
			name: "cluster connect_timeout above 5s",
			file: "nodes/edge/clusters.yaml", from: "connectTimeout: 2s", to: "connectTimeout: 7.5s",
			want: `nodes/edge/clusters.yaml:17:17: cluster "web" connect_timeout: 7.5s breaks policy (policy/clusters.cue:3:27: <=5): invalid value 7.5 (out of bound <=5)`,
		},
		{
			name: "listener on a privileged port",
			file: "nodes/edge/listeners.yaml", from: "port_value: 8443", to: "port_value: 443",
			want: `nodes/edge/listeners.yaml:6:17: listener "https" address.socket_address.port_value: 443 breaks policy (policy/listeners.cue:2:51: >=1024): invalid value 443 (out of bound >=1024)`,
		},
		{
			name: "route without timeout",
			file: "nodes/edge/routes.yaml", from: "route: { cluster: api, timeout: 3s }", to: "route: { cluster: api }",
			want: `nodes/edge/routes.yaml:8:16: route "main" virtual_hosts[0].routes[0].route.timeout: missing, but policy requires it (policy/routes.cue:4:11: timeout!: number)`,
		},
		{
			name: "HTTP filter not allowed",
			file: "nodes/edge/listeners.yaml", from: "filters.http.cors.v3.Cors", to: "filters.http.buffer.v3.Buffer\n                max_request_bytes: 10",
			want: `nodes/edge/listeners.yaml:21:26: listener "https" filter_chains[0].filters[0].typed_config.http_filters[0].typed_config["@type"]: "type.googleapis.com/envoy.extensions.filters.http.buffer.v3.Buffer" breaks policy (policy/http-filters.cue:9:27: #allowed): matches none of the allowed values`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := read(tt.file)
			require.Contains(t, src, tt.from)
			res := renderWithStage(exampleTree(t, "", map[string]string{tt.file: strings.Replace(src, tt.from, tt.to, 1)}))
			assert.Equal(t, tt.want+"\n", diagLines(res.Diagnostics))
		})
	}
}

func TestPolicyNodeSelection(t *testing.T) {
	policy := "nodes: [\"edge-*\"]\ncluster: connect_timeout: <=1\n"
	for _, tt := range []struct {
		node  string
		fires bool
	}{{"edge-eu", true}, {"internal", false}} {
		t.Run(tt.node, func(t *testing.T) {
			fsys := exampleTree(t, "", map[string]string{"policy/strict.cue": policy})
			for name, f := range fsys {
				if rest, ok := strings.CutPrefix(name, "nodes/edge/"); ok {
					delete(fsys, name)
					fsys["nodes/"+tt.node+"/"+rest] = f
				}
			}
			res := renderWithStage(fsys)
			if tt.fires {
				assert.Contains(t, diagLines(res.Diagnostics), `connect_timeout: 2s breaks policy (policy/strict.cue:2:27: <=1)`)
			} else {
				assert.Empty(t, res.Diagnostics)
			}
		})
	}
}

func TestPolicyFileErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"unknown type key", "clusters: connect_timeout: <=5\n", `policy/bad.cue:1:1: unknown policy field "clusters"`},
		{"syntax", "cluster: {\n", "policy/bad.cue:1:12: policy does not parse"},
		{"bad nodes", "nodes: \"edge\"\n", "policy/bad.cue:1:1: nodes: want a list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := renderWithStage(exampleTree(t, "", map[string]string{"policy/bad.cue": tt.src}))
			assert.Contains(t, diagLines(res.Diagnostics), tt.want)
		})
	}
}

func TestPrunable(t *testing.T) {
	s := New()
	tests := []struct {
		src  string
		want bool
	}{
		{"cluster: connect_timeout: <=5", true},
		{"import \"strings\"\ncluster: name: strings.HasPrefix(\"a\")", true},
		{"#ok: 1 | 2\ncluster: x: #ok", true},
		{"cluster: {a: int, b: a}", false},
		{"cluster: {name?: string, if name == \"a\" {x: 1}}", false},
	}
	for _, tt := range tests {
		p, diags := s.compilePolicy("p.cue", []byte(tt.src))
		require.Empty(t, diags, tt.src)
		assert.Equal(t, tt.want, p.rules[policyKeys["cluster"]].keep != nil, tt.src)
	}
}

// TestPolicyHelpersAcrossFiles: a definition declared in one file of a
// policy package is usable in the others, with the imports it needs;
// files of another package or directory do not see it.
func TestPolicyHelpersAcrossFiles(t *testing.T) {
	defs := "package policy\n\nimport \"strings\"\n\n#MaxConnect: 1\n#Generous: 60\n#NoUpper: strings.ToLower(#name) & #name\n#name: string\n"
	tests := []struct {
		name  string
		files map[string]string
		want  string // a diagnostic substring; "" means no diagnostics
	}{
		{
			name: "definition from a sibling",
			files: map[string]string{
				"policy/defs.cue":     defs,
				"policy/clusters.cue": "package policy\n\ncluster: connect_timeout: <=#MaxConnect\n",
			},
			want: `connect_timeout: 2s breaks policy (policy/clusters.cue:3:27: <=#MaxConnect)`,
		},
		{
			name: "compliant with a shared definition",
			files: map[string]string{
				"policy/defs.cue":     defs,
				"policy/clusters.cue": "package policy\n\ncluster: connect_timeout: <=#Generous\n",
			},
		},
		{
			name: "other package does not share",
			files: map[string]string{
				"policy/defs.cue":     strings.Replace(defs, "package policy", "package other", 1),
				"policy/clusters.cue": "package policy\n\ncluster: connect_timeout: <=#MaxConnect\n",
			},
			want: `reference "#MaxConnect" not found`,
		},
		{
			name: "other directory does not share",
			files: map[string]string{
				"policy/shared/defs.cue": defs,
				"policy/clusters.cue":    "package policy\n\ncluster: connect_timeout: <=#MaxConnect\n",
			},
			want: `reference "#MaxConnect" not found`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			override := map[string]string{}
			for name, src := range tt.files {
				override[name] = src
			}
			fsys := exampleTree(t, "", override)
			res := renderWithStage(fsys)
			if tt.want == "" {
				assert.Empty(t, diagLines(res.Diagnostics))
				return
			}
			assert.Contains(t, diagLines(res.Diagnostics), tt.want)
		})
	}
}

// TestPolicyJSONSpelling: a policy may spell fields as Envoy's JSON does
// (connectTimeout); it means the same as the proto spelling.
func TestPolicyJSONSpelling(t *testing.T) {
	fsys := exampleTree(t, "", map[string]string{
		"policy/camel.cue": "cluster: connectTimeout: <=1\nlistener: address?: socketAddress?: portValue?: >=1024\n",
	})
	got := diagLines(renderWithStage(fsys).Diagnostics)
	assert.Contains(t, got, `connect_timeout: 2s breaks policy (policy/camel.cue:1:26: <=1)`)
	assert.NotContains(t, got, "port_value", "the listener rule holds for the example")
	assert.Equal(t, "connect_timeout", toSnake("connectTimeout"))
	assert.Equal(t, "port_value", toSnake("portValue"))
}

// TestPolicyConditionalOnAnotherField is the conditional rule of
// docs/cue.md: only the cluster it names is held to it.
func TestPolicyConditionalOnAnotherField(t *testing.T) {
	policy := "cluster: {\n\tname?: string\n\tif name == \"api\" {\n\t\tconnect_timeout: <=0.1\n\t}\n}\n"
	got := diagLines(renderWithStage(exampleTree(t, "", map[string]string{"policy/api.cue": policy})).Diagnostics)
	assert.Contains(t, got, `cluster "api" connect_timeout: 0.25s breaks policy (policy/api.cue:4:20: <=0.1)`)
	assert.NotContains(t, got, `cluster "web"`, "the other cluster is not held to the rule")
}

func TestFirstExprCutsTheRuleText(t *testing.T) {
	for in, want := range map[string]string{
		`<=5`:                          `<=5`,
		`<=5 // at most five seconds`:  `<=5 `,
		`!="*"]`:                       `!="*"`,
		`!="*"}]}]`:                    `!="*"`,
		`strings.ToLower(name)`:        `strings.ToLower(name)`,
		`"a,b" | "c]"]`:                `"a,b" | "c]"`,
		`>=1024, name: string`:         `>=1024`,
		`[...{x: 1}]`:                  `[...{x: 1}]`,
		`=~"^\"[a-z]//$" // a comment`: `=~"^\"[a-z]//$" `,
	} {
		assert.Equal(t, want, firstExpr(in), "%s", in)
	}
}

// Policies a home imposes (WithPolicies) apply to a tree that has none of
// its own, are reported under their own name, and apply beside the tree's
// policies, render after render of the same stage.
func TestPoliciesImposedByTheHome(t *testing.T) {
	fsys := exampleTree(t, "", nil)
	for name := range fsys {
		if strings.HasPrefix(name, "policy/") {
			delete(fsys, name)
		}
	}
	s := New().WithPolicies(map[string][]byte{"configmap/legate-system/rules/timeouts.cue": []byte("cluster: connect_timeout: <=1\n")})
	opts := render.Options{Generators: []render.Generator{s}, Checks: []render.Check{s}}
	for range 2 {
		res := render.Render(fsys, opts)
		assert.Contains(t, diagLines(res.Diagnostics), `connect_timeout: 2s breaks policy (configmap/legate-system/rules/timeouts.cue:1:27: <=1)`)
	}
	assert.Empty(t, renderWithStage(fsys).Diagnostics, "without the imposed policy the tree passes")
}
