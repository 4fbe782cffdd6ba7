package render

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/out from testdata/in and delete orphaned golden files")

// goldenText is the stable text form of a result compared with the
// golden files: diagnostics, or per node the hash and each resource with
// its source and a digest of its canonical body.
func goldenText(res *Result) string {
	var b strings.Builder
	for _, d := range res.Diagnostics {
		fmt.Fprintln(&b, d.String())
	}
	for _, d := range res.Warnings {
		fmt.Fprintln(&b, d.String())
	}
	ids := make([]string, 0, len(res.Nodes))
	for id := range res.Nodes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		nc := res.Nodes[id]
		fmt.Fprintf(&b, "node %s %s\n", id, nc.Hash)
		urls := make([]string, 0, len(nc.Types))
		for u := range nc.Types {
			urls = append(urls, u)
		}
		sort.Strings(urls)
		for _, u := range urls {
			ts := nc.Types[u]
			fmt.Fprintf(&b, "  %s %s\n", typeLabel(u), ts.Hash)
			for _, r := range ts.Resources {
				sum := sha256.Sum256(r.Body)
				fmt.Fprintf(&b, "    %q %s body:%s\n", r.Name, r.Source, hex.EncodeToString(sum[:8]))
			}
		}
		for _, s := range nc.ExternalSecrets {
			fmt.Fprintf(&b, "  external secret %q ref=%s key=%s kind=%s %s\n", s.Name, s.Ref, s.Key, s.Kind, s.Source)
		}
	}
	return b.String()
}

// TestGolden renders each directory of testdata/in and compares the result
// with testdata/out/<case>.txt. Run with -update to rewrite.
func TestGolden(t *testing.T) {
	cases, err := os.ReadDir("testdata/in")
	require.NoError(t, err)
	want := map[string]bool{}
	for _, c := range cases {
		if !c.IsDir() {
			continue
		}
		name := c.Name()
		want[name+".txt"] = true
		t.Run(name, func(t *testing.T) {
			res := Render(os.DirFS(filepath.Join("testdata/in", name)), Options{})
			got := goldenText(res)
			golden := filepath.Join("testdata/out", name+".txt")
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
				return
			}
			exp, err := os.ReadFile(golden)
			require.NoError(t, err, "missing golden file: run go test ./render -run TestGolden -update")
			assert.Equal(t, string(exp), got)
		})
	}
	outs, err := os.ReadDir("testdata/out")
	require.NoError(t, err)
	for _, o := range outs {
		if want[o.Name()] {
			continue
		}
		if *update {
			require.NoError(t, os.Remove(filepath.Join("testdata/out", o.Name())))
			continue
		}
		t.Errorf("orphaned golden file testdata/out/%s: run with -update to delete it", o.Name())
	}
}
