package render

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func diagStrings(res *Result) []string {
	out := []string{}
	for _, d := range res.Diagnostics {
		out = append(out, d.String())
	}
	return out
}

const okCluster = `"@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
name: backend
type: STATIC
`

func TestRules(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{
			name: "valid cluster",
			doc:  okCluster,
			want: []string{},
		},
		{
			name: "unknown field",
			doc:  okCluster + "colour: blue\n",
			want: []string{`x.yaml:4:1: cluster "backend" colour: unknown field "colour"`},
		},
		{
			name: "json names accepted",
			doc:  `{"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name": "c", "connectTimeout": "2s"}`,
			want: []string{},
		},
		{
			name: "missing name",
			doc:  "\"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\ntype: STATIC\n",
			want: []string{`x.yaml:1:1: cluster "" name: value length must be at least 1 runes`},
		},
		{
			name: "missing listener name",
			doc:  "\"@type\": type.googleapis.com/envoy.config.listener.v3.Listener\nstat_prefix: l\n",
			want: []string{`x.yaml:1:1: listener "": name is required: xDS clients ask for resources by name`},
		},
		{
			name: "duplicate name",
			doc:  okCluster + "---\n" + okCluster,
			want: []string{`x.yaml:5:1: cluster "backend": duplicate cluster name "backend" for node "n": first defined at x.yaml:1:1`},
		},
		{
			name: "pgv in any",
			doc: `"@type": type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig
name: hcm
typed_config:
  "@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy
  cluster: backend
`,
			want: []string{
				`x.yaml:4:3: extension config "hcm" typed_config.stat_prefix: value length must be at least 1 runes`,
			},
		},
		{
			name: "eds without assignment",
			doc:  "\"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\nname: e\ntype: EDS\neds_cluster_config: {eds_config: {ads: {}}}\n",
			want: []string{`x.yaml:2:7: cluster "e" name: endpoint "e" is not defined for node "n"`},
		},
		{
			name: "eds from another server is not checked",
			doc:  "\"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\nname: e\ntype: EDS\neds_cluster_config: {eds_config: {path_config_source: {path: /etc/eds.yaml}}}\n",
			want: []string{},
		},
		{
			name: "yaml anchors and merge keys",
			doc: `base: &base
  type: STATIC
  connect_timeout: 1s
---
"@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
name: merged
<<: *base
`,
			want: []string{`x.yaml:1:1: not an Envoy configuration document: expected "@type", "resources" (filesystem xDS), "static_resources" (bootstrap) or an EnvoyConfig with apiVersion and kind`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := RenderDocuments([]Document{{Path: "x.yaml", Data: []byte(tt.doc)}}, Options{DefaultNode: "n"})
			assert.Equal(t, tt.want, diagStrings(res))
			assert.Equal(t, len(tt.want) == 0, res.Nodes != nil)
		})
	}
}

func TestSameContentSameHash(t *testing.T) {
	a := fstest.MapFS{
		"nodes/n/all.yaml": {Data: []byte(okCluster + "connect_timeout: 1s\n---\n\"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\nname: other\ntype: STATIC\n")},
	}
	b := fstest.MapFS{
		"legate.yaml":     {Data: []byte("nodeIDs: [n]\n")},
		"z/other.json":    {Data: []byte(`{"name": "other", "type": "STATIC", "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster"}`)},
		"a/backend.yaml":  {Data: []byte("connectTimeout: 1s\n" + okCluster)},
		"a/README.md":     {Data: []byte("ignored")},
		"a/binary.yaml":   {Data: []byte{0, 1, 2}},
		".git/config.yml": {Data: []byte("not: read")},
	}
	ra, rb := Render(a, Options{}), Render(b, Options{})
	require.True(t, ra.OK(), "%v", ra.Diagnostics)
	require.True(t, rb.OK(), "%v", rb.Diagnostics)
	assert.Equal(t, ra.Nodes["n"].Hash, rb.Nodes["n"].Hash)
	assert.Equal(t, ra.Nodes["n"].Types[ClusterType].Hash, rb.Nodes["n"].Types[ClusterType].Hash)
	assert.NotEqual(t, ra.Nodes["n"].Types[ClusterType].Resources[0].Source, rb.Nodes["n"].Types[ClusterType].Resources[0].Source)

	c := fstest.MapFS{"nodes/n/all.yaml": {Data: []byte(okCluster + "connect_timeout: 2s\n")}}
	rc := Render(c, Options{})
	require.True(t, rc.OK())
	assert.NotEqual(t, ra.Nodes["n"].Hash, rc.Nodes["n"].Hash)
}

func TestLimits(t *testing.T) {
	fsys := fstest.MapFS{
		"nodes/n/big.yaml":   {Data: []byte(okCluster + strings.Repeat("# padding\n", 20))},
		"nodes/n/small.yaml": {Data: []byte(okCluster)},
	}
	res := Render(fsys, Options{MaxFileSize: 100})
	assert.Equal(t, []string{"nodes/n/big.yaml: file is 288 bytes, over the limit of 100 bytes per file"}, diagStrings(res))

	res = Render(fsys, Options{MaxFiles: 1})
	assert.Equal(t, []string{"nodes/n/small.yaml: more than 1 configuration files: raise the file limit or split the repository"}, diagStrings(res))

	res = Render(fsys, Options{MaxTotalSize: 300})
	assert.Equal(t, []string{"nodes/n/small.yaml: configuration files exceed 300 bytes in total: raise the total size limit or split the repository"}, diagStrings(res))
}

func TestTargetFileErrors(t *testing.T) {
	fsys := fstest.MapFS{
		"legate.yaml": {Data: []byte("nodes: [a]\n")},
		"c.yaml":      {Data: []byte(okCluster)},
	}
	res := Render(fsys, Options{})
	assert.Equal(t, []string{`legate.yaml:1:1: unknown field "nodes" in legate.yaml: want nodeIDs or strict`}, diagStrings(res))
}

func TestDecodeRoundTrip(t *testing.T) {
	res := RenderDocuments([]Document{{Path: "x.yaml", Data: []byte(okCluster)}}, Options{DefaultNode: "n"})
	require.True(t, res.OK())
	r := res.Nodes["n"].Types[ClusterType].Resources[0]
	m, err := Decode(ClusterType, r.Body)
	require.NoError(t, err)
	body, err := Marshal(m)
	require.NoError(t, err)
	assert.Equal(t, r.Body, body)
	_, err = Decode("type.googleapis.com/nope", r.Body)
	assert.ErrorContains(t, err, "not an xDS resource type")
}

func TestChecksHook(t *testing.T) {
	var seen []string
	check := CheckFunc(func(rs []*Decoded) []Diagnostic {
		var out []Diagnostic
		for _, r := range rs {
			seen = append(seen, r.Name)
			out = append(out, r.Diagnose("type", "policy", "static clusters are not allowed"))
		}
		return out
	})
	res := RenderDocuments([]Document{{Path: "x.yaml", Data: []byte(okCluster)}}, Options{DefaultNode: "n", Checks: []Check{check}})
	assert.Equal(t, []string{"backend"}, seen)
	assert.Equal(t, []string{`x.yaml:3:7: cluster "backend" type: static clusters are not allowed`}, diagStrings(res))
}

func TestDiagnosticFormats(t *testing.T) {
	d := Diagnostic{Pos: Position{File: "a,b.yaml", Line: 3, Column: 5}, Type: RouteType, Name: "main", Field: "virtual_hosts[0]", Rule: RuleReference, Message: "50% bad\nreally"}
	assert.Equal(t, "::error file=a%2Cb.yaml,line=3,col=5,title=legate reference::route \"main\" virtual_hosts[0]: 50%25 bad%0Areally", GitHubAnnotation(d))
	var b strings.Builder
	require.NoError(t, WriteDiagnostics(&b, FormatJSON, nil))
	assert.Equal(t, "[]\n", b.String())
	assert.Error(t, WriteDiagnostics(&b, "xml", nil))

	// A file name is the repository author's: with a newline it would
	// start a line of its own (a GitHub Actions workflow command), with an
	// escape sequence drive the terminal. Text keeps each diagnostic on
	// one line with its control characters escaped.
	b.Reset()
	hostile := Diagnostic{Pos: Position{File: "a\n::stop-commands::x\n\x1b[2J.yaml", Line: 1}, Message: "bad\tvalue"}
	require.NoError(t, WriteDiagnostics(&b, FormatText, []Diagnostic{hostile, d}))
	assert.Equal(t, `a\n::stop-commands::x\n\x1b[2J.yaml:1: bad\tvalue`+"\n"+`a,b.yaml:3:5: route "main" virtual_hosts[0]: 50% bad\nreally`+"\n", b.String())
}

func TestHostileYAML(t *testing.T) {
	laughs := "\"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\nname: c\nmetadata:\n  filter_metadata:\n    a: &a {x: [1, 2, 3, 4, 5, 6, 7, 8, 9]}\n"
	prev := "a"
	for i := 0; i < 30; i++ {
		cur := "l" + strings.Repeat("x", i)
		laughs += "    " + cur + ": &" + cur + " [" + strings.Repeat("*"+prev+", ", 9) + "*" + prev + "]\n"
		prev = cur
	}
	for name, doc := range map[string]string{
		"recursive alias": "\"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\nname: &n [*n]\n",
		"billion laughs":  laughs,
	} {
		t.Run(name, func(t *testing.T) {
			res := RenderDocuments([]Document{{Path: "f.yaml", Data: []byte(doc)}}, Options{DefaultNode: "n"})
			require.Len(t, res.Diagnostics, 1)
			assert.Contains(t, res.Diagnostics[0].Message, "YAML alias")
		})
	}
}

func TestJSONPositions(t *testing.T) {
	doc := "{\n  \"@type\": \"type.googleapis.com/envoy.config.cluster.v3.Cluster\",\n  \"name\": \"c\",\n  \"type\": \"STATIC\",\n  \"connectTimeout\": \"soon\"\n}\n"
	res := RenderDocuments([]Document{{Path: "c.json", Data: []byte(doc)}}, Options{DefaultNode: "n"})
	assert.Equal(t, []string{`c.json:5:21: cluster "c" connectTimeout: invalid google.protobuf.Duration value "soon"`}, diagStrings(res))
}

func TestKubernetesNeighbours(t *testing.T) {
	ec := func(name string) string {
		return "apiVersion: marin3r.3scale.net/v1alpha1\nkind: EnvoyConfig\nmetadata: {name: " + name + "}\nspec:\n  nodeID: kuard\n  resources:\n  - type: cluster\n    value: {name: c, type: STATIC}\n"
	}
	fsys := fstest.MapFS{
		"app/kustomization.yaml": {Data: []byte("resources:\n- envoyconfig.yaml\n")},
		"app/list.yaml":          {Data: []byte("resources:\n- envoyconfig.yaml\n")},
		"app/deploy.yaml":        {Data: []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n")},
		"app/envoyconfig.yaml":   {Data: []byte(ec("first"))},
	}
	res := Render(fsys, Options{})
	require.True(t, res.OK(), "%v", res.Diagnostics)
	assert.Len(t, res.Nodes["kuard"].Types[ClusterType].Resources, 1)

	fsys["other/envoyconfig.yaml"] = &fstest.MapFile{Data: []byte(ec("second"))}
	res = Render(fsys, Options{})
	assert.Equal(t, []string{`other/envoyconfig.yaml:5:11: node "kuard" is already configured by EnvoyConfig "first" at app/envoyconfig.yaml:1:1: use one EnvoyConfig per node ID`}, diagStrings(res))
}
