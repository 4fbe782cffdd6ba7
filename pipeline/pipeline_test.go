package pipeline_test

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/pipeline"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/boltstore"
	"github.com/legate-dev/legate/sources"
)

// harness is a pipeline in front of a real engine on a real bbolt store.
type harness struct {
	t      *testing.T
	p      *pipeline.Pipeline
	e      *revisions.Engine
	mu     sync.Mutex
	served map[string]string // node -> version served
	asked  []string          // sources the pipeline asked to render again
	scope  func(string, *render.Result) []render.Diagnostic
	store  *boltstore.Store
}

// closeStore closes the harness's store, before a restart on its dir.
func (h *harness) closeStore() { require.NoError(h.t, h.store.Close()) }

func newHarness(t *testing.T) *harness {
	t.Helper()
	return harnessOn(t, t.TempDir(), nil)
}

// harnessOn is a harness on the store in dir (a second harness on the same
// dir is a restart), with the sources' tenants told by tenant.
func harnessOn(t *testing.T, dir string, tenant func(string) string) *harness {
	t.Helper()
	store, err := boltstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	h := &harness{t: t, served: map[string]string{}, store: store}
	h.e, err = revisions.New(revisions.Options{Store: store, Publisher: revisions.PublisherFunc(func(node string, pub revisions.Publication) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.served[node] = pub.Version
		return nil
	})})
	require.NoError(t, err)
	require.NoError(t, h.e.Restore(context.Background()))
	h.p, err = pipeline.New(pipeline.Options{
		Engine: h.e,
		Tenant: tenant,
		Scope: func(source string, r *render.Result) []render.Diagnostic {
			if h.scope == nil {
				return nil
			}
			return h.scope(source, r)
		},
		Rerender: func(source string) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.asked = append(h.asked, source)
		},
	})
	require.NoError(t, err)
	return h
}

// cluster is a file configuring one cluster named name for node.
func cluster(node, name string) (string, *fstest.MapFile) {
	return "nodes/" + node + "/" + name + ".yaml", &fstest.MapFile{Data: fmt.Appendf(nil,
		"\"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\nname: %s\ntype: STATIC\nconnect_timeout: 1s\n", name)}
}

// tree is a fetch result of source at commit whose files configure, for
// each node, one cluster named after the node and the commit's content
// label.
func tree(source, commit, content string, nodes ...string) *sources.Result {
	files := fstest.MapFS{}
	for _, n := range nodes {
		path, f := cluster(n, n+"-"+content)
		files[path] = f
	}
	return fetched(source, commit, content, files)
}

func fetched(source, commit, content string, files fs.FS) *sources.Result {
	return &sources.Result{
		Snapshot: sources.Snapshot{Origin: sources.Origin{Kind: sources.KindGit, Source: source, Ref: "main", Commit: commit}, Files: files},
		Content:  content, Changed: true,
	}
}

func (h *harness) sync(res *sources.Result) pipeline.Status {
	h.t.Helper()
	return h.p.Sync(context.Background(), res.Origin.Source, res)
}

func (h *harness) published(node string) revisions.PublishedStatus {
	h.t.Helper()
	n, ok := h.e.Node(node)
	require.True(h.t, ok, "node %s is known", node)
	require.NotNil(h.t, n.Published, "node %s is served", node)
	return *n.Published
}

func TestSyncAppliesEveryNode(t *testing.T) {
	h := newHarness(t)
	st := h.sync(tree("one", "c1", "a", "edge", "web"))
	assert.Equal(t, []string{"edge", "web"}, st.Nodes)
	assert.Equal(t, "main@sha1:c1", st.AppliedRevision)
	assert.Empty(t, st.Problems())
	for _, n := range []string{"edge", "web"} {
		assert.Equal(t, "c1", h.published(n).Commit)
	}
}

func TestInvalidContentIsRecordedNotApplied(t *testing.T) {
	h := newHarness(t)
	h.sync(tree("one", "c1", "a", "edge"))
	bad := fetched("one", "c2", "b", fstest.MapFS{"nodes/edge/x.yaml": {Data: []byte("\"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\nname: x\nconnect_timeout: -1s\n")}})
	st := h.sync(bad)
	assert.True(t, st.Invalid)
	assert.Equal(t, "main@sha1:c2", st.Revision)
	assert.Equal(t, "main@sha1:c1", st.AppliedRevision, "the applied revision trails the rejected one")
	require.NotEmpty(t, st.Diagnostics)
	assert.Equal(t, len(st.Diagnostics), st.DiagnosticCount)
	assert.Contains(t, st.Summary(), "validation failed with")
	assert.Contains(t, st.Summary(), "x.yaml")
	assert.Equal(t, "c1", h.published("edge").Commit, "the last good content stays served")

	// A fix is applied, and clears the rejection.
	st = h.sync(tree("one", "c3", "c", "edge"))
	assert.False(t, st.Invalid)
	assert.Empty(t, st.Summary())
	assert.Equal(t, "c3", h.published("edge").Commit)
}

// A node rendered by two sources is served from the first and reported
// on both, as structured conflicts; a second render of the refused source
// does not take the node; when the owner stops rendering it, the refused
// source is asked to render again and takes it over.
func TestOneNodeOneSource(t *testing.T) {
	h := newHarness(t)
	h.sync(tree("one", "a1", "a", "shared"))
	st := h.sync(tree("two", "b1", "b", "shared", "own"))
	want := []pipeline.Conflict{{Node: "shared", Owner: "one", Contender: "two"}}
	assert.Equal(t, want, st.Conflicts)
	assert.Equal(t, []string{"own"}, st.Nodes)
	assert.Equal(t, want, h.p.Status("one").Conflicts, "the owner reports it too")
	assert.Equal(t, `node "shared" is already rendered by source "one"; a node ID may come from one source only`, st.Summary())
	assert.Equal(t, `node "shared" is also claimed by source "two"; its configuration from there is ignored`, h.p.Status("one").Summary())
	assert.Equal(t, "a1", h.published("shared").Commit)

	// The refused source renders again: still refused, still one conflict.
	st = h.sync(tree("two", "b2", "b2", "shared", "own"))
	assert.Equal(t, want, st.Conflicts)
	assert.Equal(t, "a1", h.published("shared").Commit, "a refused source never wins on a later claim")
	assert.Equal(t, "one", h.p.Owner("shared"))

	// The owner stops rendering it: "two" is asked to render again, and
	// does even though its content did not change.
	st = h.sync(tree("one", "a2", "a2", "other"))
	assert.Empty(t, st.Conflicts)
	assert.Equal(t, []string{"two"}, h.asked)
	assert.True(t, h.p.Dropped("one", "shared"))
	unchanged := tree("two", "b2", "b2", "shared", "own")
	unchanged.Changed = false
	st = h.sync(unchanged)
	assert.Equal(t, []string{"own", "shared"}, st.Nodes)
	assert.Empty(t, st.Conflicts)
	assert.Equal(t, "b2", h.published("shared").Commit)
}

// The contender stops rendering the node: the conflict is gone on both
// sides.
func TestConflictEndsWhenTheContenderLetsGo(t *testing.T) {
	h := newHarness(t)
	h.sync(tree("one", "a1", "a", "shared"))
	h.sync(tree("two", "b1", "b", "shared"))
	require.NotEmpty(t, h.p.Status("one").Conflicts)
	st := h.sync(tree("two", "b2", "b2", "mine"))
	assert.Empty(t, st.Conflicts)
	assert.Empty(t, h.p.Status("one").Conflicts)
	assert.Empty(t, h.asked, "nobody waits for a node")
}

// A commit that changes nothing under the path is not rendered again but
// becomes the origin of the content it carries.
func TestUnchangedContentRecordsTheNewCommit(t *testing.T) {
	h := newHarness(t)
	renders := 0
	h.scope = func(string, *render.Result) []render.Diagnostic { renders++; return nil }
	var outcomes []revisions.Outcome
	h.e.Subscribe(func(o revisions.Outcome) { outcomes = append(outcomes, o) })
	h.sync(tree("one", "c1", "a", "edge"))
	version := h.published("edge").Version
	same := tree("one", "c2", "a", "edge")
	same.Changed = false
	st := h.sync(same)
	assert.Equal(t, 1, renders, "unchanged content is not rendered again")
	assert.Equal(t, "main@sha1:c2", st.AppliedRevision)
	assert.Equal(t, "c2", h.published("edge").Commit)
	assert.Equal(t, version, h.published("edge").Version, "the same content is not served anew")

	require.NotEmpty(t, outcomes)
	assert.Equal(t, "c2", outcomes[len(outcomes)-1].Origin.Commit, "the new commit gets its status")

	// The same commit again changes nothing and reports nothing again.
	reported := len(outcomes)
	st = h.sync(same)
	assert.Equal(t, "main@sha1:c2", st.AppliedRevision)
	assert.Equal(t, 1, renders)
	assert.Len(t, outcomes, reported, "a commit is reported once")

	// A fetch that says its content changed is rendered, whatever the
	// label says.
	again := tree("one", "c3", "a", "edge")
	h.sync(again)
	assert.Equal(t, 2, renders)
}

// Content rejected before is applied (its origin moves) but reported as
// tainted, not served.
func TestTaintedContentIsReported(t *testing.T) {
	h := newHarness(t)
	h.sync(tree("one", "c1", "good", "edge"))
	h.sync(tree("one", "c2", "bad", "edge"))
	bad := h.published("edge")
	require.Equal(t, "c2", bad.Commit)
	h.e.ObserveProxy(revisions.ProxyEvent{Kind: revisions.ProxyConnected, Node: "edge", Proxy: "p"})
	h.e.ObserveProxy(revisions.ProxyEvent{Kind: revisions.ProxyNACK, Node: "edge", Proxy: "p", SnapshotVersion: bad.Version, Error: "broken"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = h.e.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool {
		n, _ := h.e.Node("edge")
		return n.Published != nil && n.Published.Commit == "c1"
	}, 10*time.Second, 5*time.Millisecond, "rolled back")

	st := h.sync(tree("one", "c3", "bad", "edge"))
	assert.Equal(t, []string{"edge"}, st.Tainted)
	assert.Equal(t, "c1", h.published("edge").Commit, "tainted content is not served again")
}

// A scope diagnostic rejects the render like any other.
func TestScopeRejectsTheRender(t *testing.T) {
	h := newHarness(t)
	h.scope = func(source string, r *render.Result) []render.Diagnostic {
		return []render.Diagnostic{{Pos: render.Position{File: "nodes/edge/edge-a.yaml", Line: 1}, Rule: "secret-scope", Message: "source " + source + " may not read it"}}
	}
	st := h.sync(tree("one", "c1", "a", "edge"))
	assert.True(t, st.Invalid)
	assert.Contains(t, st.Summary(), "source one may not read it")
	_, ok := h.e.Node("edge")
	assert.False(t, ok, "nothing is applied")
}

// An engine that cannot store the node reports the node's error.
func TestApplyErrorsAreReportedPerNode(t *testing.T) {
	p, err := pipeline.New(pipeline.Options{Engine: failingEngine{}})
	require.NoError(t, err)
	st := p.Sync(context.Background(), "one", tree("one", "c1", "a", "edge"))
	assert.Empty(t, st.Nodes)
	assert.Equal(t, []pipeline.NodeError{{Node: "edge", Error: "disk full"}}, st.ApplyErrors)
	assert.Equal(t, `node "edge": disk full`, st.Summary())
}

func TestNewNeedsAnEngine(t *testing.T) {
	_, err := pipeline.New(pipeline.Options{})
	assert.Error(t, err)
}

func TestRenderMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	p, err := pipeline.New(pipeline.Options{Engine: failingEngine{}, Registerer: reg})
	require.NoError(t, err)
	p.Sync(context.Background(), "one", tree("one", "c1", "a", "edge"))
	p.Sync(context.Background(), "one", fetched("one", "c2", "b", fstest.MapFS{"nodes/edge/x.yaml": {Data: []byte("name: [")}}))
	n, err := testutil.GatherAndCount(reg, "legate_render_duration_seconds", "legate_render_failures_total")
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.InDelta(t, 1, testutil.ToFloat64(mustCounter(t, reg, "legate_render_failures_total")), 0)

	_, err = pipeline.New(pipeline.Options{Engine: failingEngine{}, Registerer: reg})
	assert.Error(t, err, "the metrics are registered once")
}

// mustCounter is the value of the one series of a counter in reg.
func mustCounter(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "unused"})
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			require.Len(t, mf.GetMetric(), 1)
			c.Add(mf.GetMetric()[0].GetCounter().GetValue())
			return c
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

type failingEngine struct{}

func (failingEngine) Apply(context.Context, string, *render.NodeConfig, sources.Origin) error {
	return fmt.Errorf("disk full")
}
func (failingEngine) RecordValidationFailure(sources.Origin, []render.Diagnostic) {}
func (failingEngine) Revision(string, string) (revisions.Revision, bool, bool) {
	return revisions.Revision{}, false, false
}
func (failingEngine) Owners() map[string]string                     { return nil }
func (failingEngine) Ownership(string) revisions.Ownership          { return revisions.Ownership{} }
func (failingEngine) Release(context.Context, string, string) error { return nil }
func (failingEngine) Forget(context.Context, string) error          { return nil }

// A status marked invalid without diagnostics (made by hand) still reads.
func TestProblemsOfAnInvalidStatusWithoutDiagnostics(t *testing.T) {
	st := pipeline.Status{Source: "one", Invalid: true}
	assert.Empty(t, st.Problems())
}

// What the log says of an apply is what happened: tainted content is not
// "configuration applied".
func TestLogSaysWhatWasServed(t *testing.T) {
	var lines []string
	var mu sync.Mutex
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	store, err := boltstore.Open(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	var e *revisions.Engine
	e, err = revisions.New(revisions.Options{Store: store, Publisher: revisions.PublisherFunc(func(string, revisions.Publication) error { return nil })})
	require.NoError(t, err)
	require.NoError(t, e.Restore(context.Background()))
	p, err := pipeline.New(pipeline.Options{Engine: e, Log: log})
	require.NoError(t, err)
	said := func(msg string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, l := range lines {
			if strings.Contains(l, msg) {
				n++
			}
		}
		return n
	}

	p.Sync(context.Background(), "one", tree("one", "c1", "good", "edge"))
	assert.Equal(t, 1, said(`"msg"="configuration applied"`))
	p.Sync(context.Background(), "one", tree("one", "c2", "bad", "edge"))
	n, _ := e.Node("edge")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	e.ObserveProxy(revisions.ProxyEvent{Kind: revisions.ProxyConnected, Node: "edge", Proxy: "p"})
	e.ObserveProxy(revisions.ProxyEvent{Kind: revisions.ProxyNACK, Node: "edge", Proxy: "p", SnapshotVersion: n.Published.Version, Error: "no"})
	require.Eventually(t, func() bool {
		n, _ := e.Node("edge")
		return n.Published.Commit == "c1"
	}, 10*time.Second, 5*time.Millisecond)

	before := said(`"msg"="configuration applied"`)
	p.Sync(context.Background(), "one", tree("one", "c3", "bad", "edge"))
	assert.Equal(t, before, said(`"msg"="configuration applied"`), "tainted content is not said to be applied")
	assert.Equal(t, 1, said("commit carries content the proxies rejected before"))
	assert.Zero(t, said("commit applied to no node"))

	p.Sync(context.Background(), "one", tree("one", "c4", "none"))
	assert.Equal(t, 1, said("commit applied to no node"))
}

// An EnvoyConfig object's rejection names the object and the field path,
// as its status and events show it: the document the renderer read is
// legate's own, made of the object.
func TestAnObjectsRejectionNamesItsField(t *testing.T) {
	h := newHarness(t)
	doc := "apiVersion: legate.dev/v1alpha1\nkind: EnvoyConfig\nmetadata: {name: edge, namespace: team-a}\nspec:\n  nodeID: edge\n  resources:\n  - type: cluster\n    value:\n      name: backend\n      type: STATIC\n      connect_timeout: -1s\n"
	res := fetched("envoyconfig/team-a/edge", "", "a", fstest.MapFS{"team-a/edge.yaml": {Data: []byte(doc)}})
	res.Origin = sources.Origin{Kind: sources.KindKube, Source: "envoyconfig/team-a/edge", Namespace: "team-a", Name: "edge", Generation: 1}
	st := h.sync(res)
	require.True(t, st.Invalid)
	require.NotEmpty(t, st.Diagnostics)
	assert.Contains(t, st.Diagnostics[0].String(), "EnvoyConfig team-a/edge spec.resources[0].value.connect_timeout")
	assert.NotContains(t, st.Summary(), "edge.yaml")
}
