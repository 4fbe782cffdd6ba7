package webhook

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
)

// fakeRender answers at once, as an admission render answered at its
// limit does, and stops only when the test says.
type fakeRender struct {
	stop chan struct{}
	ran  int
}

func (f *fakeRender) run(context.Context) (*render.Result, <-chan struct{}) {
	f.ran++
	return &render.Result{Diagnostics: []render.Diagnostic{{Rule: render.RuleLimit, Message: "rendering did not finish within 10s"}}}, f.stop
}

// An admission slot is held until its render has stopped, not released
// when admission answers: renders given up on at their limit cannot pile
// up past admissionRenders, each holding its memory.
func TestAdmissionSlotIsHeldUntilTheRenderStops(t *testing.T) {
	slots := make(chan struct{}, admissionRenders)
	renders := make([]*fakeRender, admissionRenders)
	for i := range renders {
		renders[i] = &fakeRender{stop: make(chan struct{})}
		res, err := renderInSlot(context.Background(), slots, renders[i].run)
		require.NoError(t, err)
		assert.Equal(t, render.RuleLimit, res.Diagnostics[0].Rule, "admission answered")
	}
	assert.Len(t, slots, admissionRenders, "every answered render still holds its slot")

	// A third admission waits for a slot; its caller gives up first.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	third := &fakeRender{stop: make(chan struct{})}
	_, err := renderInSlot(ctx, slots, third.run)
	require.EqualError(t, err, "legate is busy validating other objects; apply again")
	assert.Zero(t, third.ran, "no render starts without a slot")

	// The first render stops: its slot is free, and only that one.
	close(renders[0].stop)
	slots <- struct{}{} // blocks until the slot is given back
	assert.Len(t, slots, admissionRenders)
	select {
	case slots <- struct{}{}:
		t.Fatal("a slot was freed whose render is still running")
	default:
	}
	<-slots
	close(renders[1].stop)
	res, err := renderInSlot(context.Background(), slots, third.run)
	require.NoError(t, err)
	assert.NotNil(t, res)
	assert.Equal(t, 1, third.ran)
	close(third.stop)
}
