package preview

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
)

// quickstart holds the files of the quickstart example's node (a listener,
// its routes, the cluster "backend" and its endpoints), read once.
var quickstart = func() map[string][]byte {
	dir := "../examples/quickstart/nodes/edge"
	entries, err := os.ReadDir(dir)
	if err != nil {
		panic(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			panic(err)
		}
		files[e.Name()] = data
	}
	return files
}()

// withQuickstart adds the quickstart node's files under nodes/<node>/.
func withQuickstart(fsys fstest.MapFS, node string) fstest.MapFS {
	for name, data := range quickstart {
		fsys["nodes/"+node+"/"+name] = &fstest.MapFile{Data: data}
	}
	return fsys
}

// clusters is a filesystem-xDS file holding, for each name, the
// quickstart's cluster under that name with the given connect timeout,
// its endpoints found by DNS rather than EDS (a node needs no load
// assignment for it).
func clusters(timeout string, names ...string) *fstest.MapFile {
	one := strings.TrimPrefix(string(quickstart["clusters.yaml"]), "resources:\n")
	one, _, _ = strings.Cut(one, "  eds_cluster_config:")
	one = strings.Replace(one, "type: EDS", "type: STRICT_DNS", 1)
	var b strings.Builder
	b.WriteString("resources:\n")
	for _, n := range names {
		r := strings.Replace(one, "name: backend", "name: "+n, 1)
		b.WriteString(strings.Replace(r, "connect_timeout: 1s", "connect_timeout: "+timeout, 1))
	}
	return &fstest.MapFile{Data: []byte(b.String())}
}

// renderFleet renders fsys as legate validate does without CUE, and
// requires it valid.
func renderFleet(t testing.TB, fsys fstest.MapFS) Fleet {
	t.Helper()
	res := render.Render(fsys, render.Options{})
	require.Empty(t, res.Diagnostics, "the fixture renders")
	return FleetOf(res)
}
