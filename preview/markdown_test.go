package preview

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// manyNodes renders a fleet of n nodes, each with one cluster of the
// given timeout.
func manyNodes(t *testing.T, n int, timeout string) Fleet {
	t.Helper()
	fsys := fstest.MapFS{}
	for i := range n {
		fsys[fmt.Sprintf("nodes/node-%03d/clusters.yaml", i)] = clusters(timeout, "api")
	}
	return renderFleet(t, fsys)
}

func TestMarkdownSections(t *testing.T) {
	r := Compare(renderFleet(t, baseRepo()), renderFleet(t, headRepo()), Options{Proxies: proxies(map[string]int{"edge": 3})})
	md := r.Markdown(0)
	assert.True(t, strings.HasPrefix(md, "### legate preview: head against base: 1 node(s) changed, 1 added, 1 removed, 1 unchanged\n"))
	assert.Contains(t, md, "| node | change | proxies | resources |\n| --- | --- | --- | --- |\n| <code>edge</code> | changed | 3 | Cluster (1 changed, 1 added, 1 removed) |\n")
	assert.Contains(t, md, "<details open><summary>node <code>edge</code>: changed, 3 proxies connected</summary>\n")
	assert.Contains(t, md, "- **Cluster**: changed <code>api</code>; added <code>new</code>; removed <code>old</code>\n")
	assert.Contains(t, md, "```diff\n--- base Cluster api\n")
	assert.Equal(t, strings.Count(md, "<details"), strings.Count(md, "</details>"))

	// A short report shows its sections open, a long one folds them.
	short := Compare(manyNodes(t, 2, "1s"), manyNodes(t, 2, "2s"), Options{})
	assert.Contains(t, short.Markdown(0), "<details open><summary>node <code>node-000</code>: changed</summary>\n")
	long := Compare(manyNodes(t, 30, "1s"), manyNodes(t, 30, "2s"), Options{})
	assert.Contains(t, long.Markdown(0), "<details><summary>node <code>node-000</code>")
	assert.NotContains(t, long.Markdown(0), "<details open>")
}

func TestMarkdownLimitCutsWholeSections(t *testing.T) {
	r := Compare(manyNodes(t, 40, "1s"), manyNodes(t, 40, "2s"), Options{})
	full := r.Markdown(0)
	require.Greater(t, len(full), 4000)
	for _, limit := range []int{300, 1000, 4000} {
		md := r.Markdown(limit)
		assert.LessOrEqual(t, len(md), limit)
		assert.Contains(t, md, "not shown; `legate diff` prints the whole report")
		assert.Equal(t, strings.Count(md, "<details"), strings.Count(md, "</details>"), "no section cut in half")
		assert.Zero(t, strings.Count(md, "```")%2, "no code block cut in half")
	}
	assert.Equal(t, full, r.Markdown(len(full)+1000), "a report within the limit is whole")
	assert.NotContains(t, full, "not shown;")
}

func TestMarkdownEscapesNamesFromTheRepository(t *testing.T) {
	hostile := "a<script>x</script>|`b`*c*[l](http://e)"
	r := &Report{
		Base: "main", Head: "pr", Summary: Summary{Changed: 1},
		Nodes: []NodeChange{{Node: hostile, Change: Changed, Types: []TypeChange{{
			Type: "Cluster", Changed: []string{hostile},
			Diffs: []ResourceDiff{{Name: hostile, Change: Changed, Diff: "-a: ```\n+a: ````\n"}},
		}}}},
	}
	md := r.Markdown(0)
	assert.NotContains(t, md, "<script>")
	assert.NotContains(t, md, "|`b`")
	assert.Contains(t, md, "<code>a&lt;script&gt;x&lt;/script&gt;\\|\\`b\\`\\*c\\*\\[l\\](http://e)</code>")
	// The diff holds a fence of four backticks: its block needs five.
	assert.Contains(t, md, "`````diff\n-a: ```\n+a: ````\n`````\n")
}

func TestBoundsOfTheReport(t *testing.T) {
	base, head := manyNodes(t, 12, "1s"), manyNodes(t, 12, "2s")

	r := Compare(base, head, Options{MaxNodes: 5})
	assert.Len(t, r.Nodes, 5)
	assert.Equal(t, 7, r.NodesOmitted)
	assert.Equal(t, 12, r.Summary.Changed, "the summary counts every node")

	r = Compare(base, head, Options{MaxDiffLines: 4})
	d := r.Nodes[0].Types[0].Diffs[0]
	assert.Equal(t, 4, strings.Count(d.Diff, "\n"))
	assert.Positive(t, d.LinesOmitted)

	one := len(Compare(base, head, Options{}).Nodes[0].Types[0].Diffs[0].Diff)
	r = Compare(base, head, Options{MaxBytes: 3*one + 1})
	assert.Equal(t, 9, r.DiffsOmitted)
	assert.NotEmpty(t, r.Nodes[2].Types[0].Diffs[0].Diff)
	assert.Empty(t, r.Nodes[3].Types[0].Diffs[0].Diff)
	assert.Contains(t, r.Nodes[3].Types[0].Diffs[0].Note, "size bound")
}

func TestLines(t *testing.T) {
	assert.Nil(t, Lines(""))
	assert.Equal(t, []string{"a\n", "b\n"}, Lines("a\nb\n"))
	assert.Equal(t, []string{"a\n", "b\n"}, Lines("a\nb"))
}

func TestUnifiedDiff(t *testing.T) {
	text, cut := UnifiedDiff([]string{"a\n", "b\n"}, []string{"a\n", "c\n"}, "x", "y", 0)
	assert.Equal(t, "--- x\n+++ y\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n", text)
	assert.Zero(t, cut)
	text, cut = UnifiedDiff([]string{"a\n", "b\n"}, []string{"a\n", "c\n"}, "x", "y", 3)
	assert.Equal(t, "--- x\n+++ y\n@@ -1,2 +1,2 @@\n", text)
	assert.Equal(t, 3, cut)
	text, _ = UnifiedDiff([]string{"a\n"}, []string{"a\n"}, "x", "y", 0)
	assert.Empty(t, text)
}
