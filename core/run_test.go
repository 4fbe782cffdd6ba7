package core

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// blocking runs until its context ends and records that it did.
func blocking(ended *atomic.Bool) Part {
	return Part{Run: func(ctx context.Context) error {
		<-ctx.Done()
		ended.Store(true)
		return nil
	}}
}

// A part's failure ends the others and is what RunParts returns.
func TestRunPartsReturnsTheFirstFailure(t *testing.T) {
	boom := errors.New("engine failed")
	var ended atomic.Bool
	stopped := make(chan struct{})
	server := Part{
		Run:  func(context.Context) error { <-stopped; return nil }, // ignores ctx, as grpc.Server.Serve
		Stop: func() { close(stopped) },
	}
	err := RunParts(t.Context(), blocking(&ended), server, Part{Run: func(context.Context) error { return boom }})
	require.ErrorIs(t, err, boom)
	assert.True(t, ended.Load(), "the others were ended")
}

// A part that stops on its own, even without an error, ends the home.
func TestRunPartsEndsWhenAPartStops(t *testing.T) {
	var ended atomic.Bool
	done := make(chan error, 1)
	quits := Part{Run: func(context.Context) error { return nil }}
	go func() { done <- RunParts(t.Context(), blocking(&ended), quits) }()
	select {
	case err := <-done:
		require.NoError(t, err)
		assert.True(t, ended.Load())
	case <-time.After(10 * time.Second):
		t.Fatal("RunParts went on without one of its parts")
	}
}

// When the context ends, every part is ended and nothing is an error.
func TestRunPartsStopsWithItsContext(t *testing.T) {
	var a, b atomic.Bool
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- RunParts(ctx, blocking(&a), blocking(&b)) }()
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
		assert.True(t, a.Load() && b.Load())
	case <-time.After(10 * time.Second):
		t.Fatal("RunParts did not return after its context ended")
	}
}
