package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCorpus renders configurations published by the Envoy and MARIN3R
// projects (see testdata/corpus/NOTICE.md): each must be valid as it is.
func TestCorpus(t *testing.T) {
	for _, dir := range []string{"envoy", "marin3r"} {
		files, err := filepath.Glob(filepath.Join("testdata/corpus", dir, "*.yaml"))
		require.NoError(t, err)
		require.NotEmpty(t, files)
		for _, f := range files {
			t.Run(filepath.Base(f), func(t *testing.T) {
				data, err := os.ReadFile(f)
				require.NoError(t, err)
				res := RenderDocuments([]Document{{Path: f, Data: data}}, Options{DefaultNode: "corpus"})
				assert.Empty(t, res.Diagnostics)
				assert.NotEmpty(t, res.Nodes)
			})
		}
	}
}

// TestCorpusBroken renders variants of the corpus with one mistake each
// and expects exactly the diagnostics in the .want file beside each.
func TestCorpusBroken(t *testing.T) {
	files, err := filepath.Glob("testdata/corpus/broken/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			want, err := os.ReadFile(strings.TrimSuffix(f, ".yaml") + ".want")
			require.NoError(t, err)
			res := RenderDocuments([]Document{{Path: filepath.ToSlash(f), Data: data}}, Options{DefaultNode: "corpus"})
			var got []string
			for _, d := range res.Diagnostics {
				got = append(got, d.String())
			}
			assert.Equal(t, strings.Split(strings.TrimSpace(string(want)), "\n"), got)
			assert.Nil(t, res.Nodes)
		})
	}
}
