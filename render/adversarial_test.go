package render

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Inputs written to crash or stall the renderer. Each must be rejected with
// a diagnostic on its file; none may take the process down (a stack
// overflow cannot be recovered, so these run in the test process itself:
// on a renderer without the bound, the test binary dies).
func TestAdversarialNestingIsRejected(t *testing.T) {
	cases := map[string]string{
		"deep.json":          `{"a":` + strings.Repeat("[", 5_000_000),
		"deep-closed.json":   `{"a":` + strings.Repeat("[", 20_000) + strings.Repeat("]", 20_000) + `}`,
		"deep-objects.json":  strings.Repeat(`{"a":`, 20_000) + "1" + strings.Repeat("}", 20_000),
		"deep.yaml":          "a: " + strings.Repeat("[", 5_000_000),
		"deep-closed.yaml":   "a: " + strings.Repeat("[", 20_000) + strings.Repeat("]", 20_000),
		"deep-mapping.yaml":  "a: " + strings.Repeat("{b: ", 20_000) + "1" + strings.Repeat("}", 20_000),
		"deep-block.yaml":    deepBlockYAML(20_000),
		"deep-sequence.yaml": strings.Repeat("- ", 20_000) + "x\n",
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			res := RenderDocuments([]Document{{Path: name, Data: []byte(data)}}, Options{DefaultNode: "n"})
			require.False(t, res.OK(), "rejected")
			require.NotEmpty(t, res.Diagnostics)
			assert.Equal(t, name, res.Diagnostics[0].Pos.File)
		})
	}
}

func deepBlockYAML(depth int) string {
	var b strings.Builder
	for i := range depth {
		b.WriteString(strings.Repeat(" ", i))
		b.WriteString("a:\n")
	}
	return b.String()
}

// A panic left anywhere in a render (here in a check, as a CUE policy stage
// runs) rejects that render with a diagnostic instead of killing the process.
func TestPanicInRenderRejectsTheRender(t *testing.T) {
	boom := CheckFunc(func([]*Decoded) []Diagnostic { panic("type mismatch: cannot convert string to message") })
	doc := Document{Path: "clusters.yaml", Data: []byte("'@type': type.googleapis.com/envoy.config.cluster.v3.Cluster\nname: c\nconnect_timeout: 1s\n")}
	res := RenderDocuments([]Document{doc}, Options{DefaultNode: "n", Checks: []Check{boom}})
	require.False(t, res.OK())
	require.Len(t, res.Diagnostics, 1)
	d := res.Diagnostics[0]
	assert.Equal(t, RuleInternal, d.Rule)
	assert.Contains(t, d.Message, "type mismatch: cannot convert string to message")
	assert.Contains(t, d.Message, "legate bug")
	assert.Nil(t, res.Nodes)
}

// A worker's panic reaches the caller's goroutine, where the boundary is:
// left in the worker it would end the process.
func TestParallelRaisesAWorkersPanicInTheCaller(t *testing.T) {
	got := func() (v any) {
		defer func() { v = recover() }()
		parallel(64, func(i int) {
			if i == 37 {
				panic("worker 37")
			}
		})
		return nil
	}()
	assert.Equal(t, "worker 37", got)
}

// Map fields whose values are not messages (map<string, string>, map of
// enums) are valid Envoy configuration, as Envoy Gateway generates for
// per-route external authorization; walking them once crashed the renderer.
func TestScalarMapFieldsRender(t *testing.T) {
	routes := `'@type': type.googleapis.com/envoy.config.route.v3.RouteConfiguration
name: eg-routes
virtual_hosts:
- name: vh
  domains: ["*"]
  routes:
  - match: {prefix: /}
    route: {cluster: backend}
    typed_per_filter_config:
      envoy.filters.http.ext_authz:
        '@type': type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute
        check_settings:
          context_extensions:
            route: httproute/default/backend/rule/0
            tenant: a
`
	cluster := `'@type': type.googleapis.com/envoy.config.cluster.v3.Cluster
name: backend
connect_timeout: 1s
type: STATIC
load_assignment:
  cluster_name: backend
  endpoints:
  - lb_endpoints:
    - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 8080}}}
`
	res := RenderDocuments([]Document{
		{Path: "routes.yaml", Data: []byte(routes)},
		{Path: "cluster.yaml", Data: []byte(cluster)},
	}, Options{DefaultNode: "n"})
	require.Empty(t, res.Diagnostics)
	assert.Contains(t, res.Nodes, "n")
}

// aliasBomb is a small document whose aliases expand a thousandfold.
func aliasBomb(i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "---\n'@type': type.googleapis.com/envoy.config.cluster.v3.Cluster\nname: bomb-%d\nmetadata:\n  filter_metadata:\n    x:\n", i)
	b.WriteString("      a: &a [\"" + strings.Repeat("x", 64) + "\",\"" + strings.Repeat("x", 64) + "\",\"" + strings.Repeat("x", 64) + "\",\"" + strings.Repeat("x", 64) + "\"]\n")
	prev := "a"
	for _, name := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		fmt.Fprintf(&b, "      %s: &%s [*%s,*%s,*%s,*%s]\n", name, name, prev, prev, prev, prev)
		prev = name
	}
	return b.String()
}

// Each bomb stays under the per-resource bound, but many of them together
// (in one file or across files) must hit the render's budget instead of
// expanding for minutes.
func TestManyAliasBombsHitTheRenderBudget(t *testing.T) {
	var one strings.Builder
	for i := range 200 {
		one.WriteString(aliasBomb(i))
	}
	docs := []Document{{Path: "bombs.yaml", Data: []byte(one.String())}}
	res := RenderDocuments(docs, Options{DefaultNode: "n"})
	require.Len(t, res.Diagnostics, 1, "the render stops at the first resource over the budget")
	d := res.Diagnostics[0]
	assert.Equal(t, RuleLimit, d.Rule)
	assert.Equal(t, "bombs.yaml", d.Pos.File)
	assert.Positive(t, d.Pos.Line)
	assert.Contains(t, d.Message, "expands to more than its budget")
}

// clusters is a YAML stream of n minimal clusters.
func clusters(n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\n\"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\nname: c%d\nconnect_timeout: 1s\n", i)
	}
	return []byte(b.String())
}

func TestResourceCountIsBounded(t *testing.T) {
	doc := Document{Path: "many.yaml", Data: clusters(11)}
	res := RenderDocuments([]Document{doc}, Options{DefaultNode: "n", MaxResources: 10})
	require.Len(t, res.Diagnostics, 1)
	d := res.Diagnostics[0]
	assert.Equal(t, RuleLimit, d.Rule)
	assert.Equal(t, "many.yaml", d.Pos.File)
	assert.Contains(t, d.Message, "more than 10 resources")

	res = RenderDocuments([]Document{doc}, Options{DefaultNode: "n", MaxResources: 11})
	require.True(t, res.OK(), "%v", res.Diagnostics)
	assert.Len(t, res.Nodes["n"].Types[ClusterType].Resources, 11)
}

func TestRenderPastItsTimeoutIsRejected(t *testing.T) {
	docs := []Document{{Path: "a.yaml", Data: clusters(3)}, {Path: "b.yaml", Data: clusters(3)}}
	res := RenderDocuments(docs, Options{DefaultNode: "n", Timeout: time.Nanosecond})
	require.Len(t, res.Diagnostics, 1)
	assert.Equal(t, RuleLimit, res.Diagnostics[0].Rule)
	assert.Contains(t, res.Diagnostics[0].Message, "rendering took longer than 1ns")
	assert.Nil(t, res.Nodes, "nothing of a stopped render is kept")

	res = RenderDocuments([]Document{{Path: "a.yaml", Data: clusters(3)}}, Options{DefaultNode: "n"})
	assert.True(t, res.OK(), "the default budget leaves room for a normal render: %v", res.Diagnostics)
}
