package render

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
)

// aliasList is YAML whose last anchor expands to width^(levels+1) copies
// of leaf: a list of width leaves, then levels lists of width aliases of
// the list before.
func aliasList(levels, width int, leaf string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "a0: &a0 [%s]\n", strings.TrimSuffix(strings.Repeat(leaf+",", width), ","))
	for l := 1; l <= levels; l++ {
		fmt.Fprintf(&b, "a%d: &a%d [%s]\n", l, l, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d,", l-1), width), ","))
	}
	return b.String()
}

// bombEnvoyConfig is the attack of issue 23: an EnvoyConfig of a few
// hundred bytes whose cluster, a YAML string in MARIN3R's envoyResources,
// holds an alias bomb in its metadata.
func bombEnvoyConfig(levels, width int) []byte {
	cluster := "name: bomb\nconnect_timeout: 1s\nmetadata:\n  filter_metadata:\n    x:\n" +
		indentLines(aliasList(levels, width, "1"), "      ")
	return []byte("apiVersion: legate.dev/v1alpha1\nkind: EnvoyConfig\nmetadata: {name: bomb, namespace: team-b}\n" +
		"spec:\n  nodeID: edge\n  serialization: yaml\n  envoyResources:\n    clusters:\n    - name: bomb\n      value: |\n" +
		indentLines(cluster, "        "))
}

func indentLines(s, prefix string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

// allocated returns what fn allocated on the heap, an upper bound of how
// much it grew the heap at its peak.
func allocated(fn func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// The attack: a 700-byte EnvoyConfig expanding to a billion values took
// the controller from 92 MB to 1 GB before it was refused. It is refused
// at the value that crossed the budget, with its file, line and the
// limit, having allocated a small part of the 256 MiB a controller has.
func TestAliasBombEnvoyConfigIsRefusedWithinItsBudget(t *testing.T) {
	doc, err := os.ReadFile("testdata/hostile/alias-bomb-envoyconfig.yaml")
	require.NoError(t, err)
	require.Equal(t, string(bombEnvoyConfig(9, 8)), string(doc), "the file legate validate is measured with (docs/benchmarks.md)")
	require.Less(t, len(doc), 900)
	var res *Result
	alloc := allocated(func() {
		res = RenderDocuments([]Document{{Path: "team-b/bomb.yaml", Data: doc}}, Options{})
	})
	require.Len(t, res.Diagnostics, 1, "one verdict: the render stops at the budget")
	d := res.Diagnostics[0]
	assert.Equal(t, RuleLimit, d.Rule)
	assert.Equal(t, "team-b/bomb.yaml", d.Pos.File)
	assert.Positive(t, d.Pos.Line)
	assert.Equal(t, "bomb", d.Name)
	assert.Contains(t, d.Field, "metadata.filter_metadata.x.")
	assert.Contains(t, d.Message, fmt.Sprintf("may add %d MiB", DefaultMaxExpansion>>20))
	assert.Less(t, alloc, uint64(64<<20), "allocated %d MiB", alloc>>20)
}

// A bomb of many tiny values has short text (300 000 values in 600 KB of
// JSON) but costs the render about 250 bytes a value; counted in bytes
// of text only it was accepted, holding over 60 MiB.
func TestTinyValuesAreChargedWhatTheRenderHolds(t *testing.T) {
	res := RenderDocuments([]Document{{Path: "bomb.yaml", Data: bombEnvoyConfig(5, 8)}}, Options{})
	require.Len(t, res.Diagnostics, 1)
	assert.Equal(t, RuleLimit, res.Diagnostics[0].Rule)
	assert.Contains(t, res.Diagnostics[0].Message, "expands to more than its budget")

	// A smaller expansion is within the budget and renders.
	res = RenderDocuments([]Document{{Path: "small.yaml", Data: bombEnvoyConfig(3, 8)}}, Options{})
	assert.True(t, res.OK(), "%v", res.Diagnostics)
}

// The writer charges the budget as it writes, per value, and stops
// within a step of the limit: not after the resource, and not counting
// text alone.
func TestWriterChargesTheBudgetAsItGoes(t *testing.T) {
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte("x:\n"+indentLines(aliasList(9, 8, "1"), "  ")), &doc))
	b := newBudget(1 << 20)
	w := &jsonWriter{budget: b}
	err := w.writeResource(doc.Content[0])
	var ne *nodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, RuleLimit, ne.rule)
	assert.Greater(t, b.used.Load(), b.limit)
	assert.LessOrEqual(t, b.used.Load(), b.limit+chargeStep+nodeCost+64, "stopped within a step of the limit")
	assert.Less(t, int64(len(w.buf)), b.limit/nodeCost*4, "text is a small part of what is charged")

	// Input without aliases is allowed what it costs once, on top.
	b = newBudget(0)
	b.allowInput(1000, doc.Content[0])
	assert.Equal(t, countNodes(doc.Content[0])*(nodeCost+24)+6000, b.limit)
}

// A render stops when its context ends, with the caller's reason, keeping
// nothing; the writer and the walks read the same stop flag.
func TestRenderStopsWhenItsContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ran := 0
	stopper := CheckFunc(func([]*Decoded) []Diagnostic {
		ran++
		cancel(errors.New("admission gave up"))
		return nil
	})
	res := RenderDocuments([]Document{{Path: "c.yaml", Data: clusters(3)}}, Options{DefaultNode: "n", Context: ctx, Checks: []Check{stopper, stopper}})
	require.Len(t, res.Diagnostics, 1)
	assert.Equal(t, RuleLimit, res.Diagnostics[0].Rule)
	assert.Contains(t, res.Diagnostics[0].Message, "rendering was stopped before it finished (admission gave up)")
	assert.Nil(t, res.Nodes)
	assert.Equal(t, 1, ran, "the render stopped before its next check")

	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte("x:\n"+indentLines(aliasList(9, 8, "1"), "  ")), &doc))
	b := newBudget(1 << 40)
	b.stopped.Store(true)
	w := &jsonWriter{budget: b}
	require.ErrorIs(t, w.writeResource(doc.Content[0]), errStopped)
	assert.LessOrEqual(t, w.cost(), int64(chargeStep+nodeCost+64), "the writer stops at its first charge")

	c := &checker{stopped: &b.stopped}
	assert.PanicsWithValue(t, errStopped, func() { c.visit(nil, nil) })
}

// A string value reached through many aliases is parsed once: each entry
// is charged for what it expands to, and the allowance of the input grows
// by the parsed value once, not per alias.
func TestAliasedEmbeddedValueIsParsedOnce(t *testing.T) {
	values := strings.TrimSuffix(strings.Repeat("1,", 4000), ",")
	var b strings.Builder
	b.WriteString("apiVersion: legate.dev/v1alpha1\nkind: EnvoyConfig\nmetadata: {name: many}\nspec:\n  nodeID: edge\n  serialization: yaml\n  envoyResources:\n    clusters:\n")
	fmt.Fprintf(&b, "    - &e {name: c, value: 'name: c\n\n        connect_timeout: 1s\n\n        metadata: {filter_metadata: {x: {v: [%s]}}}'}\n", values)
	for range 200 {
		b.WriteString("    - *e\n")
	}
	res := RenderDocuments([]Document{{Path: "many.yaml", Data: []byte(b.String())}}, Options{})
	require.Len(t, res.Diagnostics, 1, "%v", res.Diagnostics)
	assert.Equal(t, RuleLimit, res.Diagnostics[0].Rule)
	assert.Equal(t, "many.yaml", res.Diagnostics[0].Pos.File)
}

// Nested merge keys of repeated aliases would make one lookup enumerate
// 8^10 keys; a lookup stops after maxMergedPairs of them.
func TestMergeKeysAreBoundedPerMapping(t *testing.T) {
	var src strings.Builder
	src.WriteString("m0: &m0 {k: v}\n")
	for l := 1; l <= 10; l++ {
		fmt.Fprintf(&src, "m%d: &m%d {<<: [%s]}\n", l, l, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*m%d,", l-1), 8), ","))
	}
	src.WriteString("top: {<<: *m10, name: x}\n")
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(src.String()), &doc))
	top := mapValue(doc.Content[0], "top")
	calls := 0
	err := eachPair(resolveAlias(top), func(_, _ *yaml.Node) error {
		calls++
		return nil
	})
	var ne *nodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, RuleLimit, ne.rule)
	assert.Contains(t, ne.msg, "merge keys bring more than 10000 keys into this mapping")
	assert.LessOrEqual(t, calls, maxMergedPairs)
	assert.Empty(t, scalar(mapValue(top, "name")), "a lookup past the bound finds nothing")

	// A mapping merging a few keys, as people write them, is unaffected.
	require.NoError(t, yaml.Unmarshal([]byte("base: &b {a: 1, b: 2}\ntop: {<<: *b, c: 3}\n"), &doc))
	assert.Equal(t, "2", scalar(mapValue(mapValue(doc.Content[0], "top"), "b")))
}

// A selector's values repeated through aliased expressions are charged:
// 2 000 expressions of 2 000 values each would be four million label
// values from 14 KB of YAML.
func TestSelectorValuesAreCharged(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: legate.dev/v1alpha1\nkind: EnvoyConfig\nmetadata: {name: sel}\nspec:\n  nodeID: edge\n  resources:\n  - type: endpoint\n    generateFromEndpointSlices:\n      clusterName: c\n      targetPort: http\n      selector:\n        matchExpressions:\n")
	fmt.Fprintf(&b, "        - &e {key: app, operator: In, values: [%s]}\n", strings.TrimSuffix(strings.Repeat("v,", 2000), ","))
	for range 2000 {
		b.WriteString("        - *e\n")
	}
	res := RenderDocuments([]Document{{Path: "sel.yaml", Data: []byte(b.String())}}, Options{EndpointSlices: true})
	require.Len(t, res.Diagnostics, 1, "%v", res.Diagnostics)
	assert.Equal(t, RuleLimit, res.Diagnostics[0].Rule)
	assert.Equal(t, "sel.yaml", res.Diagnostics[0].Pos.File)
	assert.Equal(t, 13, res.Diagnostics[0].Pos.Line, "at the values of the expression that crossed it")
}

// nodeCost is what the render holds per value: measured at the Checks,
// when every resource is decoded and validated and the heap holds it all,
// for a bomb of tiny values (the worst case: the least text per value).
func TestNodeCostCoversWhatARenderHolds(t *testing.T) {
	doc := bombEnvoyConfig(5, 8) // 8^6+…+8 ≈ 300 000 values
	values := int64(0)
	for l, p := 0, int64(1); l <= 5; l++ {
		p *= 8
		values += p
	}
	var before, at runtime.MemStats
	measure := CheckFunc(func([]*Decoded) []Diagnostic {
		runtime.GC()
		runtime.ReadMemStats(&at)
		return nil
	})
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := RenderDocuments([]Document{{Path: "bomb.yaml", Data: doc}}, Options{MaxExpansion: 1 << 40, Checks: []Check{measure}})
	require.True(t, res.OK(), "%v", res.Diagnostics)
	held := int64(at.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d values: %d MiB held at the checks, %d bytes a value", values, held>>20, held/values)
	assert.Less(t, held/values, int64(nodeCost), "nodeCost is below what a render holds: raise it")
	assert.Greater(t, held/values, int64(nodeCost/4), "nodeCost is far above what a render holds")
}

// peakHeap runs fn and returns how far the heap's live objects grew above
// where they were before, sampled every half millisecond, and what fn
// allocated in all.
func peakHeap(fn func()) (peak, alloc uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	runtime.GC()
	base := read()
	done := make(chan struct{})
	var top atomic.Uint64
	go func() {
		tick := time.NewTicker(500 * time.Microsecond)
		defer tick.Stop()
		for {
			if v := read(); v > top.Load() {
				top.Store(v)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	alloc = allocated(fn)
	close(done)
	if v := read(); v > top.Load() {
		top.Store(v)
	}
	return top.Load() - min(base, top.Load()), alloc
}

// BenchmarkHostileObjects renders the inputs of issue 23's memory attack
// with the default options, beside a valid configuration of 1 000 routes
// in the same run, and reports the heap's peak above where it started
// and the bytes allocated per render (docs/benchmarks.md, "render
// memory bounds").
func BenchmarkHostileObjects(b *testing.B) {
	var embedded, selector strings.Builder
	embedded.WriteString("apiVersion: legate.dev/v1alpha1\nkind: EnvoyConfig\nmetadata: {name: many}\nspec:\n  nodeID: edge\n  serialization: yaml\n  envoyResources:\n    clusters:\n")
	fmt.Fprintf(&embedded, "    - &e {name: c, value: 'name: c\n\n        connect_timeout: 1s\n\n        metadata: {filter_metadata: {x: {v: [%s]}}}'}\n", strings.TrimSuffix(strings.Repeat("1,", 4000), ","))
	embedded.WriteString(strings.Repeat("    - *e\n", 5000))
	selector.WriteString("apiVersion: legate.dev/v1alpha1\nkind: EnvoyConfig\nmetadata: {name: sel}\nspec:\n  nodeID: edge\n  resources:\n  - type: endpoint\n    generateFromEndpointSlices:\n      clusterName: c\n      targetPort: http\n      selector:\n        matchExpressions:\n")
	fmt.Fprintf(&selector, "        - &e {key: app, operator: In, values: [%s]}\n", strings.TrimSuffix(strings.Repeat("v,", 5000), ","))
	selector.WriteString(strings.Repeat("        - *e\n", 5000))
	valid := syntheticRepo(1000)
	for _, tc := range []struct {
		name string
		docs []Document
	}{
		{"alias-bomb-envoyconfig", []Document{{Path: "bomb.yaml", Data: bombEnvoyConfig(9, 8)}}},
		{"tiny-values", []Document{{Path: "tiny.yaml", Data: bombEnvoyConfig(5, 8)}}},
		{"aliased-embedded-value", []Document{{Path: "many.yaml", Data: []byte(embedded.String())}}},
		{"aliased-selector", []Document{{Path: "sel.yaml", Data: []byte(selector.String())}}},
		{"valid-1000-routes", nil},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var peak, alloc uint64
			for range b.N {
				p, a := peakHeap(func() {
					var res *Result
					if tc.docs == nil {
						res = Render(valid, Options{})
					} else {
						res = RenderDocuments(tc.docs, Options{EndpointSlices: true})
					}
					if res.OK() != (tc.docs == nil) {
						b.Fatalf("verdict: %v", res.Diagnostics)
					}
				})
				peak, alloc = max(peak, p), max(alloc, a)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(alloc)/(1<<20), "alloc-MiB")
		})
	}
}
