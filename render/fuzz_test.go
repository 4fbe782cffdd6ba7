package render

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzDecode feeds arbitrary bytes through the whole pipeline as one
// document: it must never panic, and must either render or say why not,
// with every diagnostic naming the document.
func FuzzDecode(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/corpus/*/*.yaml")
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"@type":"type.googleapis.com/envoy.config.cluster.v3.Cluster","name":"c"}`))
	f.Add([]byte("a: &x [*x]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		res := RenderDocuments([]Document{{Path: "fuzz.yaml", Data: data}}, Options{DefaultNode: "fuzz"})
		require.NotNil(t, res)
		if !res.OK() {
			assert.Nil(t, res.Nodes)
		}
		for _, d := range res.Diagnostics {
			assert.Equal(t, "fuzz.yaml", d.Pos.File)
			assert.NotEmpty(t, d.Message)
		}
	})
}
