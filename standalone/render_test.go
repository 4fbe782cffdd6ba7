package standalone

import (
	"io/fs"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/statuspage"
)

// stuckGenerator stands for a CUE evaluation that does not end: it blocks
// until release is closed.
type stuckGenerator struct{ release chan struct{} }

func (g stuckGenerator) Generate(fs.FS) ([]render.Document, []render.Diagnostic) {
	<-g.release
	return nil, nil
}

// A render that does not finish rejects the commit with a limit error
// instead of wedging the source's loop, and the server goes on: a later
// render is applied.
func TestStuckRenderRejectsTheCommit(t *testing.T) {
	repo := newLocalRepo(t)
	repo.commit("a")
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var stuck atomic.Bool
	stuck.Store(true)
	s := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), DefaultNode: "edge",
		Sources: []serveconfig.SourceConfig{{Name: "config", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}, Options{Render: func() render.Options {
		if stuck.Load() {
			return render.Options{Generators: []render.Generator{stuckGenerator{release}}}
		}
		return render.Options{}
	}, renderLimit: 200 * time.Millisecond})
	runServer(t, s)
	var st statuspage.Source
	require.Eventually(t, func() bool {
		st = s.Sources()[0]
		return st.LastError != ""
	}, 30*time.Second, 10*time.Millisecond, "the stuck render is given up")
	assert.Contains(t, st.LastError, "rendering did not finish within 200ms")
	_, ok := s.engine.Node("edge")
	assert.False(t, ok, "nothing of the stuck render is applied")

	stuck.Store(false)
	repo.commit("b")
	require.True(t, s.Trigger("config"))
	require.Eventually(t, func() bool {
		n, ok := s.engine.Node("edge")
		return ok && n.Published != nil
	}, 30*time.Second, 10*time.Millisecond, "the loop goes on with the next commit")
}

// serve renders under the same file size limit validate takes.
func TestServeHonoursMaxFileSize(t *testing.T) {
	repo := newLocalRepo(t)
	repo.commit("a")
	s := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), DefaultNode: "edge", MaxFileSize: 16,
		Sources: []serveconfig.SourceConfig{{Name: "config", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}, Options{})
	runServer(t, s)
	var st statuspage.Source
	require.Eventually(t, func() bool {
		st = s.Sources()[0]
		return st.LastError != ""
	}, 30*time.Second, 10*time.Millisecond, "the commit is rejected")
	assert.Contains(t, st.LastError, "limit of 16 bytes", "%s", st.LastError)
	_, ok := s.engine.Node("edge")
	assert.False(t, ok)
}
