package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions/boltstore"
	"github.com/legate-dev/legate/sds"
	"github.com/legate-dev/legate/sources"
)

func newStore(t *testing.T) *boltstore.Store {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func newCore(t *testing.T, opts Options) *Core {
	t.Helper()
	if opts.Store == nil {
		opts.Store = newStore(t)
	}
	if opts.Secrets == nil {
		opts.Secrets = sds.Files{}
	}
	c, err := New(opts)
	require.NoError(t, err)
	return c
}

// config is a node configuration whose content (and so revision) seed
// makes distinct.
func config(node string, seed int) *render.NodeConfig {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s-%d", node, seed))
	h := hex.EncodeToString(sum[:])
	return &render.NodeConfig{NodeID: node, Hash: h, Types: map[string]render.TypeSet{
		"type.googleapis.com/envoy.config.cluster.v3.Cluster": {Hash: h},
	}}
}

func TestNewNeedsStoreAndSecrets(t *testing.T) {
	_, err := New(Options{Secrets: sds.Files{}})
	assert.ErrorContains(t, err, "no store")
	_, err = New(Options{Store: newStore(t)})
	assert.ErrorContains(t, err, "no secret resolver")
	_, err = New(Options{Store: newStore(t), Secrets: sds.Files{}, Tuning: Tuning{TaintThreshold: 2}})
	assert.ErrorContains(t, err, "taintThreshold (--taint-threshold): must be in (0, 1], got 2")
}

// Every component exists once New returns, and each is wired to the next:
// what the pipeline applies reaches the engine, the engine publishes
// through SDS to the xDS server.
func TestNewWiresEveryComponent(t *testing.T) {
	c := newCore(t, Options{Reporters: map[string]forge.Reporter{"config": nil}})
	require.NotNil(t, c.Engine())
	require.NotNil(t, c.XDS())
	require.NotNil(t, c.SDS())
	require.NotNil(t, c.Pipeline())
	require.NotNil(t, c.Statuses())
	require.NotNil(t, c.Feedback())

	ctx := t.Context()
	require.NoError(t, c.Engine().Restore(ctx))
	require.NoError(t, c.Engine().Apply(ctx, "edge", config("edge", 1), sources.Origin{Source: "config"}))
	n, ok := c.Engine().Node("edge")
	require.True(t, ok)
	assert.NotNil(t, n.Published, "the engine published through SDS to the xDS server")
}

func TestNoReportersNoStatuses(t *testing.T) {
	c := newCore(t, Options{})
	assert.Nil(t, c.Statuses())
	assert.Nil(t, c.Feedback())
	assert.NoError(t, c.RunStatuses(t.Context()), "nothing to deliver returns at once")

	looked := newCore(t, Options{ReporterOf: func(string) (forge.Reporter, error) { return nil, forge.ErrUnknownTarget }})
	assert.NotNil(t, looked.Statuses(), "a lookup alone is enough: the Kubernetes home's sources come and go")
}

// The knobs reach the engine and the dispatcher, with the defaults where
// a knob is left zero.
func TestTuningReachesEngineAndDispatcher(t *testing.T) {
	lookup := func(string) (forge.Reporter, error) { return nil, forge.ErrUnknownTarget }
	c := newCore(t, Options{ReporterOf: lookup, Tuning: Tuning{History: 3, TaintThreshold: 0.5, AnswerTimeout: 7 * time.Second, StatusMaxBackoff: 11 * time.Second}})
	assert.Equal(t, 3, c.engineOpts.History)
	assert.InDelta(t, 0.5, c.engineOpts.Threshold, 0)
	assert.Equal(t, 7*time.Second, c.engineOpts.Timeout)
	assert.Equal(t, 11*time.Second, c.statusOpts.MaxBackoff)

	d := newCore(t, Options{ReporterOf: lookup})
	assert.Equal(t, Defaults().History, d.engineOpts.History)
	assert.Equal(t, DefaultStatusMaxBackoff, d.statusOpts.MaxBackoff, "one default for both homes")
}

// The history knob bounds what the engine keeps, seen from the engine.
func TestHistoryBoundsTheEngine(t *testing.T) {
	c := newCore(t, Options{Tuning: Tuning{History: 2}})
	ctx := t.Context()
	require.NoError(t, c.Engine().Restore(ctx))
	for seed := range 4 {
		require.NoError(t, c.Engine().Apply(ctx, "edge", config("edge", seed), sources.Origin{Source: "config"}))
	}
	n, ok := c.Engine().Node("edge")
	require.True(t, ok)
	assert.Len(t, n.History, 2)
}

// Run stops when its context ends and returns no error then.
func TestRunReturnsWhenStopped(t *testing.T) {
	c := newCore(t, Options{Reporters: map[string]forge.Reporter{"config": nil}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// ServeGRPC returns nil when the server was stopped and the listener's
// error when it failed.
func TestServeGRPC(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gs := grpc.NewServer()
	done := make(chan error, 1)
	go func() { done <- ServeGRPC(gs, lis) }()
	require.Eventually(t, func() bool { return gs.GetServiceInfo() != nil }, 5*time.Second, 10*time.Millisecond)
	gs.Stop()
	assert.NoError(t, <-done)

	broken := &failingListener{Listener: mustListen(t)}
	err = ServeGRPC(grpc.NewServer(), broken)
	require.Error(t, err)
	assert.ErrorIs(t, err, errBroken)
	assert.Contains(t, err.Error(), "serve xDS on "+broken.Addr().String())
}

var errBroken = errors.New("listener broken")

type failingListener struct{ net.Listener }

func (failingListener) Accept() (net.Conn, error) { return nil, errBroken }

func mustListen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// Without reporters Run still runs the engine until its context ends: an
// empty dispatcher does not end it.
func TestRunWithoutReportersRunsTheEngine(t *testing.T) {
	c := newCore(t, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	require.Never(t, func() bool { return len(done) > 0 }, 200*time.Millisecond, 10*time.Millisecond, "Run returned before its context ended")
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}
