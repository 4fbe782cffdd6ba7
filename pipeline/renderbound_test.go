package pipeline

import (
	"context"
	"errors"
	"io/fs"
	"sync/atomic"
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

// releasedGenerator blocks until released, then hands over one valid
// cluster: a render that goes on after it would decode it and run its
// checks.
type releasedGenerator struct{ release chan struct{} }

func (g releasedGenerator) Generate(fs.FS) ([]render.Document, []render.Diagnostic) {
	<-g.release
	return []render.Document{{Path: "gen.yaml", Data: []byte("'@type': type.googleapis.com/envoy.config.cluster.v3.Cluster\nname: c\nconnect_timeout: 1s\n")}}, nil
}

// generatedAndChecked are the options of a render of what a
// releasedGenerator hands over, counting the runs of its checks.
func generatedAndChecked(release chan struct{}, checked *atomic.Int32) render.Options {
	return render.Options{
		DefaultNode: "n",
		Generators:  []render.Generator{releasedGenerator{release}},
		Checks: []render.Check{render.CheckFunc(func([]*render.Decoded) []render.Diagnostic {
			checked.Add(1)
			return nil
		})},
	}
}

// At its limit a render's context is cancelled: the render stops at its
// next check instead of running on (to the end of its own two-minute
// timeout) after its verdict. Its stopped channel says when it has.
func TestRenderWithinStopsTheRenderAtItsLimit(t *testing.T) {
	release := make(chan struct{})
	var checked atomic.Int32
	opts := generatedAndChecked(release, &checked)
	res, stopped := RenderWithin(context.Background(), fstest.MapFS{}, opts, 20*time.Millisecond)
	require.Len(t, res.Diagnostics, 1)
	assert.Equal(t, render.RuleLimit, res.Diagnostics[0].Rule)
	assert.Contains(t, res.Diagnostics[0].Message, "did not finish within 20ms")
	select {
	case <-stopped:
		t.Fatal("stopped closed while the render was still in its generator")
	default:
	}
	close(release)
	<-stopped
	assert.Zero(t, checked.Load(), "the render went on after its limit: its context was not cancelled")

	// The same render, released in time, runs to the end.
	release = make(chan struct{})
	close(release)
	opts.Generators = []render.Generator{releasedGenerator{release}}
	res, stopped = RenderWithin(context.Background(), fstest.MapFS{}, opts, time.Minute)
	<-stopped
	assert.True(t, res.OK(), "%v", res.Diagnostics)
	assert.Equal(t, int32(1), checked.Load())
}

// The caller's context stops the render as the limit does, with its cause.
func TestRenderWithinStopsWithTheCallersContext(t *testing.T) {
	release := make(chan struct{})
	var checked atomic.Int32
	opts := generatedAndChecked(release, &checked)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("the API server hung up"))
	res, stopped := RenderWithin(ctx, fstest.MapFS{}, opts, time.Minute)
	require.Len(t, res.Diagnostics, 1)
	assert.Equal(t, render.RuleLimit, res.Diagnostics[0].Rule)
	assert.Contains(t, res.Diagnostics[0].Message, "rendering was stopped before it finished (the API server hung up)")
	close(release)
	<-stopped
	assert.Zero(t, checked.Load())
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
