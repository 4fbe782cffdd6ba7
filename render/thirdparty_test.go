package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// verdictTable reads testdata/thirdparty/VERDICTS.md: one row per case,
// `| case | accept or reject | reason |`.
func verdictTable(t *testing.T) map[string][2]string {
	t.Helper()
	data, err := os.ReadFile("testdata/thirdparty/VERDICTS.md")
	require.NoError(t, err)
	out := map[string][2]string{}
	for _, line := range strings.Split(string(data), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		out[name] = [2]string{strings.TrimSpace(cells[2]), strings.TrimSpace(cells[3])}
	}
	return out
}

// TestThirdParty renders configurations in the shapes others write them
// (Envoy's examples, Envoy Gateway's xDS output in filesystem-xDS form,
// MARIN3R's EnvoyConfigs): each must get the verdict VERDICTS.md gives it,
// every rejection must have a reason there, and the diagnostics must be
// those of <case>.want (errors first, then warnings; -update rewrites).
func TestThirdParty(t *testing.T) {
	table := verdictTable(t)
	entries, err := os.ReadDir("testdata/thirdparty")
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			row, ok := table[name]
			require.True(t, ok, "case %s has no row in VERDICTS.md", name)
			res := Render(os.DirFS(filepath.Join("testdata/thirdparty", name)), Options{DefaultNode: "corpus"})
			var lines []string
			for _, d := range append(append([]Diagnostic(nil), res.Diagnostics...), res.Warnings...) {
				lines = append(lines, d.String())
			}
			got := strings.Join(lines, "\n") + "\n"
			switch row[0] {
			case "accept":
				assert.True(t, res.OK(), "Envoy accepts this configuration: %s", got)
				assert.NotEmpty(t, res.Nodes)
			case "reject":
				assert.False(t, res.OK(), "Envoy rejects this configuration: %s", row[1])
				assert.NotEmpty(t, row[1], "a rejection needs a reason in VERDICTS.md")
			default:
				t.Fatalf("verdict %q: want accept or reject", row[0])
			}
			want := filepath.Join("testdata/thirdparty", name+".want")
			if *update {
				require.NoError(t, os.WriteFile(want, []byte(got), 0o644))
				return
			}
			exp, err := os.ReadFile(want)
			require.NoError(t, err, "run go test ./render -run TestThirdParty -update")
			assert.Equal(t, string(exp), got)
		})
	}
	for name := range table {
		assert.True(t, seen[name], "VERDICTS.md lists %s, which has no directory", name)
	}
}
