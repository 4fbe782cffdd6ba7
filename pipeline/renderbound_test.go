package pipeline

import (
	"io/fs"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
)

type panickingGenerator struct{}

func (panickingGenerator) Generate(fs.FS) ([]render.Document, []render.Diagnostic) {
	panic("generator bug")
}

type stuckGenerator struct{ release chan struct{} }

func (g stuckGenerator) Generate(fs.FS) ([]render.Document, []render.Diagnostic) {
	<-g.release
	return nil, nil
}

func TestRenderBoundedCatchesAGeneratorPanic(t *testing.T) {
	res := RenderBounded(fstest.MapFS{}, render.Options{Generators: []render.Generator{panickingGenerator{}}}, time.Minute)
	require.Len(t, res.Diagnostics, 1)
	assert.Equal(t, render.RuleInternal, res.Diagnostics[0].Rule)
	assert.Contains(t, res.Diagnostics[0].Message, "generator bug")
}

func TestRenderBoundedGivesUpOnAStuckRender(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	res := RenderBounded(fstest.MapFS{}, render.Options{Generators: []render.Generator{stuckGenerator{release}}}, 50*time.Millisecond)
	require.Len(t, res.Diagnostics, 1)
	assert.Equal(t, render.RuleLimit, res.Diagnostics[0].Rule)
	assert.Contains(t, res.Diagnostics[0].Message, "did not finish within 50ms")
}

func TestRenderBoundedReturnsTheRender(t *testing.T) {
	res := RenderBounded(fstest.MapFS{}, render.Options{}, time.Minute)
	assert.True(t, res.OK())
	assert.Empty(t, res.Nodes)
}

func TestRenderLimit(t *testing.T) {
	assert.Equal(t, 3*time.Second, renderLimit(render.Options{Timeout: time.Second}, 3*time.Second), "a limit given is kept")
	assert.Equal(t, time.Second+renderGrace, renderLimit(render.Options{Timeout: time.Second}, 0))
	assert.Equal(t, render.DefaultTimeout+renderGrace, renderLimit(render.Options{}, 0))
}
