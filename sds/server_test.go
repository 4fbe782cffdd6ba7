package sds

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/xds"
)

// fakeResolver counts reads, serves what material holds, and can be made
// to block.
type fakeResolver struct {
	mu       sync.Mutex
	reads    map[string]int
	material map[string]string // ref -> content; absent: missing
	block    chan struct{}     // when set, Resolve waits on it
	entered  chan struct{}
	only     string // when set, only a read of this ref waits
}

func newFakeResolver() *fakeResolver {
	return &fakeResolver{reads: map[string]int{}, material: map[string]string{}}
}

func (f *fakeResolver) Resolve(ext render.ExternalSecret) (render.Resource, error) {
	f.mu.Lock()
	f.reads[ext.Ref]++
	block, entered := f.block, f.entered
	if f.only != "" && f.only != ext.Ref {
		block = nil
	}
	v, ok := f.material[ext.Ref]
	f.mu.Unlock()
	if block != nil {
		entered <- struct{}{}
		<-block
	}
	if !ok {
		return render.Resource{}, revisions.NotReady(errors.New("missing " + ext.Ref))
	}
	return render.Resource{Name: ext.Name, Body: []byte(v)}, nil
}

func (f *fakeResolver) count(ref string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads[ref]
}

func (f *fakeResolver) set(ref, v string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.material[ref] = v
}

func pubWith(version string, refs ...string) revisions.Publication {
	p := revisions.Publication{Version: version, Types: map[string]revisions.PublishedType{}}
	for _, r := range refs {
		p.ExternalSecrets = append(p.ExternalSecrets, render.ExternalSecret{Name: r, Ref: r, Kind: "tls"})
	}
	return p
}

type recorder struct {
	mu    sync.Mutex
	sets  []xds.Snapshot
	nodes []string
}

func (r *recorder) set(node string, s xds.Snapshot) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sets = append(r.sets, s)
	r.nodes = append(r.nodes, node)
	return nil
}

// versionsOf are the versions served to node, in order.
func (r *recorder) versionsOf(node string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for i, n := range r.nodes {
		if n == node {
			out = append(out, r.sets[i].Version)
		}
	}
	return out
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sets)
}

// What Warm read is not read again by Publish.
func TestPublishUsesWhatWarmRead(t *testing.T) {
	res := newFakeResolver()
	res.set("a", "one")
	var rec recorder
	s := NewServer(res, rec.set, logr.Discard())
	pub := pubWith("v1", "a")
	s.Warm(pub.ExternalSecrets)
	s.Warm(pub.ExternalSecrets)
	require.Equal(t, 1, res.count("a"), "a secret already read is not read again")
	require.NoError(t, s.Publish("edge", pub))
	assert.Equal(t, 1, res.count("a"), "Publish reads nothing Warm read")
	assert.Equal(t, 1, rec.count())
}

// A secret never read is read by Publish; a missing one is read again at
// every attempt, so the node is served as soon as it appears.
func TestPublishReadsWhatIsMissing(t *testing.T) {
	res := newFakeResolver()
	var rec recorder
	s := NewServer(res, rec.set, logr.Discard())
	pub := pubWith("v1", "a")
	err := s.Publish("edge", pub)
	require.ErrorIs(t, err, revisions.ErrNotReady)
	assert.Equal(t, 1, res.count("a"))
	res.set("a", "one")
	require.NoError(t, s.Publish("edge", pub))
	assert.Equal(t, 2, res.count("a"))
	require.NoError(t, s.Publish("edge", pubWith("v2", "a")))
	assert.Equal(t, 2, res.count("a"), "material read is used")
}

// A refresh reads outside the lock Publish takes: a slow read does not
// hold up a publication.
func TestRefreshDoesNotHoldUpPublish(t *testing.T) {
	res := newFakeResolver()
	res.set("a", "one")
	res.set("b", "two")
	var rec recorder
	s := NewServer(res, rec.set, logr.Discard())
	require.NoError(t, s.Publish("edge", pubWith("v1", "a")))
	s.Warm(pubWith("v2", "b").ExternalSecrets)

	res.mu.Lock()
	res.block, res.entered = make(chan struct{}), make(chan struct{}, 4)
	block := res.block
	res.mu.Unlock()
	done := make(chan struct{})
	go func() { defer close(done); s.Refresh() }()
	select {
	case <-res.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the refresh did not start reading")
	}

	published := make(chan error, 1)
	go func() { published <- s.Publish("web", pubWith("v2", "b")) }()
	select {
	case err := <-published:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Publish waited for the refresh's read")
	}
	close(block) // entered has room for the refresh's other reads
	<-done
}

// A refresh pushes changed material and forgets what no publication uses.
func TestRefreshPushesAndForgets(t *testing.T) {
	res := newFakeResolver()
	res.set("a", "one")
	res.set("b", "two")
	var rec recorder
	s := NewServer(res, rec.set, logr.Discard())
	require.NoError(t, s.Publish("edge", pubWith("v1", "a")))
	s.Warm(pubWith("", "b").ExternalSecrets)
	s.Refresh()
	assert.Equal(t, 1, rec.count(), "nothing changed")
	assert.Len(t, s.read, 2, "a warm read survives one refresh")

	res.set("a", "changed")
	s.Refresh()
	require.Equal(t, 2, rec.count(), "changed material is pushed")
	assert.Equal(t, "v1", rec.sets[1].Version)
	assert.Len(t, s.read, 1, "the warm read nobody published is forgotten")

	require.NoError(t, s.Publish("edge", pubWith("v2")))
	s.Refresh()
	assert.Empty(t, s.read, "material no publication uses is forgotten")
}

// blockOn makes every read of ref wait until the returned func is called;
// entered receives once per read that waits.
func (f *fakeResolver) blockOn(ref string) (entered chan struct{}, release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.block, f.entered, f.only = make(chan struct{}), make(chan struct{}, 4), ref
	return f.entered, sync.OnceFunc(func() { close(f.block) })
}

// slowServer serves the secrets "slow", whose reads wait until release
// is called (entered tells when one waits), and "fast".
func slowServer(t *testing.T) (s *Server, rec *recorder, entered chan struct{}, release func()) {
	res := newFakeResolver()
	res.set("slow", "one")
	res.set("fast", "two")
	rec = &recorder{}
	s = NewServer(res, rec.set, logr.Discard())
	entered, release = res.blockOn("slow")
	t.Cleanup(release)
	return s, rec, entered, release
}

// A Secret read that hangs (an API server answering late) for one node's
// publication does not hold up another node's: Publish reads outside the
// lock every node shares.
func TestSlowReadOfOneNodeDelaysNoOtherNode(t *testing.T) {
	s, rec, entered, release := slowServer(t)

	slow := make(chan error, 1)
	go func() { slow <- s.Publish("a", pubWith("a1", "slow")) }()
	<-entered
	fast := make(chan error, 1)
	go func() { fast <- s.Publish("b", pubWith("b1", "fast")) }()
	require.Eventually(t, func() bool { return len(rec.versionsOf("b")) == 1 }, 10*time.Second, time.Millisecond,
		"node b waited for node a's read")
	require.NoError(t, <-fast)
	assert.Empty(t, rec.versionsOf("a"), "node a is still reading")
	assert.True(t, s.References("fast"))

	release()
	require.NoError(t, <-slow)
	assert.Equal(t, []string{"a1"}, rec.versionsOf("a"))
}

// Two publications of one node are served in the order they were made,
// however long the first one's read takes.
func TestPublicationsOfOneNodeStayInOrder(t *testing.T) {
	s, rec, entered, release := slowServer(t)

	first := make(chan error, 1)
	go func() { first <- s.Publish("edge", pubWith("v1", "slow")) }()
	<-entered
	second := make(chan error, 1)
	go func() { second <- s.Publish("edge", pubWith("v2", "fast")) }()
	// The second waits for the node, behind the first (or, were it not
	// held, has overtaken it already).
	require.Eventually(t, func() bool { return s.waiting("edge") == 2 || len(second) == 1 }, 10*time.Second, time.Millisecond)
	release()
	require.NoError(t, <-first)
	require.NoError(t, <-second)
	assert.Equal(t, []string{"v1", "v2"}, rec.versionsOf("edge"), "the older publication overtook the newer one")
}
