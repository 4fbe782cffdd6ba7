package preview

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
)

// baseRepo has three nodes: same and edge run the quickstart with more
// clusters, retired has one cluster.
func baseRepo() fstest.MapFS {
	fsys := fstest.MapFS{
		"nodes/same/more.yaml":        clusters("1s", "api"),
		"nodes/edge/more.yaml":        clusters("1s", "api", "old"),
		"nodes/retired/clusters.yaml": clusters("1s", "api"),
	}
	return withQuickstart(withQuickstart(fsys, "same"), "edge")
}

// headRepo changes edge (a timeout, a cluster added, one removed), drops
// retired and adds fresh.
func headRepo() fstest.MapFS {
	fsys := baseRepo()
	fsys["nodes/edge/more.yaml"] = clusters("2s", "api", "new")
	delete(fsys, "nodes/retired/clusters.yaml")
	fsys["nodes/fresh/clusters.yaml"] = clusters("1s", "api")
	return fsys
}

func proxies(counts map[string]int) func(string) int {
	return func(node string) int {
		if n, ok := counts[node]; ok {
			return n
		}
		return -1
	}
}

func TestCompareListsNodesTypesAndNames(t *testing.T) {
	r := Compare(renderFleet(t, baseRepo()), renderFleet(t, headRepo()),
		Options{BaseLabel: "main", HeadLabel: "pr-7", Proxies: proxies(map[string]int{"edge": 3, "retired": 2})})

	assert.True(t, r.Changed())
	assert.Equal(t, Summary{Added: 1, Removed: 1, Changed: 1, Unchanged: 1}, r.Summary)
	require.Len(t, r.Nodes, 3)
	var ids, changes []string
	for _, n := range r.Nodes {
		ids, changes = append(ids, n.Node), append(changes, n.Change)
	}
	assert.Equal(t, []string{"edge", "fresh", "retired"}, ids, "nodes by ID")
	assert.Equal(t, []string{Changed, Added, Removed}, changes)

	edge := r.Nodes[0]
	require.NotNil(t, edge.Proxies)
	assert.Equal(t, 3, *edge.Proxies)
	assert.Nil(t, r.Nodes[1].Proxies, "fresh: proxies unknown")
	require.Len(t, edge.Types, 1, "the listener, routes and endpoints did not change")
	tc := edge.Types[0]
	assert.Equal(t, "Cluster", tc.Type)
	assert.Equal(t, []string{"api"}, tc.Changed)
	assert.Equal(t, []string{"new"}, tc.Added)
	assert.Equal(t, []string{"old"}, tc.Removed)
	require.Len(t, tc.Diffs, 3)
	assert.Equal(t, []string{"api", "new", "old"}, []string{tc.Diffs[0].Name, tc.Diffs[1].Name, tc.Diffs[2].Name})
	api := tc.Diffs[0]
	assert.Equal(t, "nodes/edge/more.yaml:2:3", api.Source)
	// Envoy's field names, as the author wrote them.
	assert.Contains(t, api.Diff, "-connect_timeout: 1s\n")
	assert.Contains(t, api.Diff, "+connect_timeout: 2s\n")
	assert.Contains(t, api.Diff, "--- main Cluster api\n+++ pr-7 Cluster api\n")
	assert.NotContains(t, api.Diff, "name: api\n-", "context is unchanged lines")

	var text bytes.Buffer
	require.NoError(t, r.Text(&text))
	assert.Contains(t, text.String(), "pr-7 against main: 1 node(s) changed, 1 added, 1 removed, 1 unchanged\n")
	assert.Contains(t, text.String(), "node edge: changed, 3 proxies connected\n  Cluster: changed api; added new; removed old\n")
	assert.NotContains(t, text.String(), "node same")
}

func TestCompareEqualFleetsChangeNothing(t *testing.T) {
	r := Compare(renderFleet(t, baseRepo()), renderFleet(t, baseRepo()), Options{})
	assert.False(t, r.Changed())
	assert.Equal(t, Summary{Unchanged: 3}, r.Summary)
	assert.Empty(t, r.Nodes)
	var text bytes.Buffer
	require.NoError(t, r.Text(&text))
	assert.Equal(t, "head changes no node (3 unchanged)\n", text.String())
}

func TestCompareIsStable(t *testing.T) {
	b, h := renderFleet(t, baseRepo()), renderFleet(t, headRepo())
	var first bytes.Buffer
	require.NoError(t, Compare(b, h, Options{}).JSON(&first))
	md := Compare(b, h, Options{}).Markdown(0)
	for range 5 {
		var again bytes.Buffer
		require.NoError(t, Compare(b, h, Options{}).JSON(&again))
		require.Equal(t, first.String(), again.String())
		require.Equal(t, md, Compare(b, h, Options{}).Markdown(0))
	}
}

func TestCompareInvalidHeadCarriesDiagnostics(t *testing.T) {
	head := withQuickstart(fstest.MapFS{}, "edge")
	head["nodes/edge/routes.yaml"].Data = []byte(strings.Replace(string(quickstart["routes.yaml"]), "name: edge-routes\n", "name: edge-routes\n  validate_clusters: true\n", 1))
	delete(head, "nodes/edge/clusters.yaml")
	res := render.Render(head, render.Options{})
	require.NotEmpty(t, res.Diagnostics)
	r := Compare(renderFleet(t, baseRepo()), FleetOf(res), Options{HeadLabel: "pr-7", MaxDiagnostics: 1})

	assert.True(t, r.Invalid)
	assert.False(t, r.Changed(), "an invalid head publishes nothing")
	require.Len(t, r.Diagnostics, 1)
	assert.Equal(t, len(res.Diagnostics)-1, r.DiagnosticsOmitted)
	var text bytes.Buffer
	require.NoError(t, r.Text(&text))
	assert.Contains(t, text.String(), "pr-7 is invalid")
	assert.Contains(t, text.String(), "nodes/edge/routes.yaml:")
	assert.Contains(t, text.String(), `"backend" is not defined`)
	md := r.Markdown(0)
	assert.Contains(t, md, "<code>nodes/edge/routes.yaml:")
	var js struct {
		Invalid     bool
		Diagnostics []render.Diagnostic
	}
	var buf bytes.Buffer
	require.NoError(t, r.JSON(&buf))
	require.NoError(t, json.Unmarshal(buf.Bytes(), &js))
	assert.True(t, js.Invalid)
	assert.Equal(t, "nodes/edge/routes.yaml", js.Diagnostics[0].Pos.File)
	assert.Positive(t, js.Diagnostics[0].Pos.Line)
}

func TestCompareInvalidBaseShowsHeadAsAdded(t *testing.T) {
	r := Compare(Fleet{Diagnostics: []render.Diagnostic{{Message: "broken"}}}, renderFleet(t, baseRepo()), Options{})
	assert.True(t, r.BaseInvalid)
	assert.Equal(t, Summary{Added: 3}, r.Summary)
	var text bytes.Buffer
	require.NoError(t, r.Text(&text))
	assert.Contains(t, text.String(), "base did not render")
}

func TestCompareExternalSecretsByName(t *testing.T) {
	b := Fleet{Nodes: map[string]*render.NodeConfig{"edge": {Hash: "1", ExternalSecrets: []render.ExternalSecret{
		{Name: "kept", Ref: "ns/kept", Kind: "tls"}, {Name: "moved", Ref: "ns/a", Kind: "tls"}, {Name: "gone", Ref: "ns/gone", Kind: "tls"},
	}}}}
	h := Fleet{Nodes: map[string]*render.NodeConfig{"edge": {Hash: "2", ExternalSecrets: []render.ExternalSecret{
		{Name: "kept", Ref: "ns/kept", Kind: "tls"}, {Name: "moved", Ref: "ns/b", Kind: "tls"}, {Name: "new", Ref: "ns/new", Kind: "opaque"},
	}}}}
	r := Compare(b, h, Options{})
	require.Len(t, r.Nodes, 1)
	require.Len(t, r.Nodes[0].Types, 1)
	tc := r.Nodes[0].Types[0]
	assert.Equal(t, TypeChange{Type: "secret reference", Added: []string{"new"}, Removed: []string{"gone"}, Changed: []string{"moved"}}, tc)
}

func TestCompareNamesFilesFromTheRepositoryRoot(t *testing.T) {
	head := renderFleet(t, headRepo())
	head.Warnings = []render.Diagnostic{{Pos: render.Position{File: "nodes/edge/x.yaml", Line: 3}, Message: "odd", Severity: render.SeverityWarning}}
	r := Compare(renderFleet(t, baseRepo()), head, Options{Dir: "config/envoy"})
	assert.Equal(t, "config/envoy/nodes/edge/more.yaml:2:3", r.Nodes[0].Types[0].Diffs[0].Source)
	require.Len(t, r.Warnings, 1)
	assert.Equal(t, "config/envoy/nodes/edge/x.yaml", r.Warnings[0].Pos.File)
	var text bytes.Buffer
	require.NoError(t, r.Text(&text))
	assert.Contains(t, text.String(), "config/envoy/nodes/edge/x.yaml:3: warning: odd\n")
	assert.Contains(t, r.Markdown(0), "- <code>config/envoy/nodes/edge/x.yaml:3</code>: warning: odd\n")

	bad := Fleet{Diagnostics: []render.Diagnostic{{Pos: render.Position{File: "nodes/a.yaml", Line: 1}, Message: "bad"}}}
	r = Compare(Fleet{}, bad, Options{Dir: "config/envoy"})
	assert.Equal(t, "config/envoy/nodes/a.yaml", r.Diagnostics[0].Pos.File)
	assert.Equal(t, "nodes/a.yaml", bad.Diagnostics[0].Pos.File, "the caller's fleet is not modified")
}
