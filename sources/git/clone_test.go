package git

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/netguard"
	"github.com/legate-dev/legate/sources"
)

// monorepo is a repository with one directory per source, served over
// smart HTTP, and the sources of those directories sharing one registry.
type monorepo struct {
	repo *testRepo
	srv  *gitHTTPServer
	srcs map[string]*Source
}

func newMonorepo(t *testing.T, dirs ...string) *monorepo {
	t.Helper()
	m := &monorepo{repo: newTestRepo(t), srcs: map[string]*Source{}}
	m.commit("v1", dirs)
	m.srv = serveGitHTTP(t, filepath.Dir(m.repo.dir), nil)
	state, clones := t.TempDir(), NewClones("")
	for _, d := range dirs {
		m.srcs[d] = mustNew(t, Config{Name: d, URL: m.srv.URL + "/repo.git", Path: d, StateDir: state, Clones: clones})
	}
	return m
}

// commit writes "<dir>: <version>" into every dir's x.yaml.
func (m *monorepo) commit(version string, dirs []string) string {
	files := map[string]string{}
	for _, d := range dirs {
		files[d+"/x.yaml"] = d + ": " + version
	}
	return m.repo.commit(version, files)
}

// requests is what the server answered: listings and upload-packs.
func (m *monorepo) requests() (listings, packs int64) {
	packs = m.srv.fetches.Load()
	return m.srv.requests.Load() - packs, packs
}

func TestSourcesOfOneRepositoryShareItsClone(t *testing.T) {
	dirs := []string{"a", "b", "c"}
	m := newMonorepo(t, dirs...)
	ctx := context.Background()
	c := m.srcs["a"].c
	for _, d := range dirs {
		require.Same(t, c, m.srcs[d].c, "source %s shares the clone", d)
	}
	assert.Equal(t, filepath.Join(filepath.Dir(m.srcs["a"].Dir()), filepath.Base(c.dir)), m.srcs["c"].Dir())

	// One after the other, each asks after the last listing: each lists,
	// and the objects travel once.
	for _, d := range dirs {
		res, err := m.srcs[d].Fetch(ctx)
		require.NoError(t, err, d)
		assert.Equal(t, map[string]string{"x.yaml": d + ": v1"}, readAll(t, res.Files), d)
	}
	listings, packs := m.requests()
	assert.Equal(t, int64(3), listings, "three fetches asked one after the other: three listings")
	assert.Equal(t, int64(1), packs, "the repository is fetched once for the three sources")

	// A push triggers the three together (what a webhook does): one
	// listing and one fetch serve them all.
	v2 := m.commit("v2", dirs)
	results := fetchTogether(t, m.srcs["a"], m.srcs["b"], m.srcs["c"])
	for _, d := range dirs {
		res := results[m.srcs[d]]
		assert.Equal(t, v2, res.Origin.Commit, d)
		assert.Equal(t, d, res.Origin.Source, d)
		assert.True(t, res.Changed, d)
		assert.Equal(t, map[string]string{"x.yaml": d + ": v2"}, readAll(t, res.Files), d)
	}
	l2, p2 := m.requests()
	assert.Equal(t, int64(1), l2-listings, "one listing for the three sources a push triggered")
	assert.Equal(t, int64(1), p2-packs, "one fetch for the three sources a push triggered")
}

func TestASharedListingOlderThanTheFetchIsNotReused(t *testing.T) {
	dirs := []string{"a", "b"}
	m := newMonorepo(t, dirs...)
	ctx := context.Background()
	_, err := m.srcs["a"].Fetch(ctx)
	require.NoError(t, err)
	_, err = m.srcs["b"].Fetch(ctx)
	require.NoError(t, err)

	// a lists and fetches v2; then v3 is pushed. b, asked after a's
	// listing, must not take it for the remote's state.
	m.commit("v2", dirs)
	res, err := m.srcs["a"].Fetch(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"x.yaml": "a: v2"}, readAll(t, res.Files))
	v3 := m.commit("v3", dirs)
	res, err = m.srcs["b"].Fetch(ctx)
	require.NoError(t, err)
	assert.Equal(t, v3, res.Origin.Commit, "b lists the remote itself")
	assert.Equal(t, map[string]string{"x.yaml": "b: v3"}, readAll(t, res.Files))
}

func TestOnlyAlikeSourcesShareAClone(t *testing.T) {
	state := t.TempDir()
	clones := NewClones("")
	base := Config{Name: "a", URL: "https://git.example/org/cfg.git", Path: "a", StateDir: state, Clones: clones}
	ref := mustNew(t, base)
	guard := netguard.New(nil, "")
	cases := []struct {
		name  string
		edit  func(*Config)
		share bool
	}{
		{"another path and name", func(c *Config) { c.Name, c.Path = "b", "b" }, true},
		{"another ref", func(c *Config) { c.Ref = Ref{Branch: "release"} }, true},
		{"another timeout", func(c *Config) { c.Timeout = time.Minute }, true},
		{"another URL", func(c *Config) { c.URL = "https://git.example/org/other.git" }, false},
		{"a password", func(c *Config) { c.Auth.Password = sources.Secret{File: "/run/token"} }, false},
		{"a password value", func(c *Config) { c.Auth.Password = sources.Literal("s3cret") }, false},
		{"credentials in the URL", func(c *Config) { c.URL = "https://bob:pw@git.example/org/cfg.git" }, false},
		{"another user name", func(c *Config) { c.Auth.Username = "bob" }, false},
		{"a bearer token", func(c *Config) { c.Auth.BearerToken = sources.Secret{Env: "TOKEN"} }, false},
		{"a shallow depth", func(c *Config) { c.Depth = 1 }, false},
		{"another size limit", func(c *Config) { c.MaxRepoSize = 1 << 20 }, false},
		{"a guard", func(c *Config) { c.Guard = guard }, false},
		{"another state directory", func(c *Config) { c.StateDir = t.TempDir() }, false},
		{"no registry", func(c *Config) { c.Clones = nil }, false},
		{"another scope's registry", func(c *Config) { c.Clones = NewClones("namespace team-b") }, false},
		{"credentials named by another identity", func(c *Config) { c.CredentialsID = "Secret team-a/other" }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.edit(&cfg)
			src := mustNew(t, cfg)
			if tc.share {
				assert.Same(t, ref.c, src.c)
				return
			}
			assert.NotSame(t, ref.c, src.c)
			assert.NotEqual(t, ref.Dir(), src.Dir(), "a clone apart has a directory apart")
		})
	}
	// Two sources alike under one guard share (a home's sources all have
	// its guard).
	g1 := base
	g1.Guard, g1.Clones = guard, NewClones("")
	g2 := g1
	g2.Name, g2.Path = "b", "b"
	assert.Same(t, mustNew(t, g1).c, mustNew(t, g2).c)
	// The same credentials by identity: a rotated Secret keeps the clone.
	r1 := base
	r1.CredentialsID, r1.Auth.Password = "Secret team-a/git", sources.Literal("old")
	r2 := r1
	r2.Auth.Password = sources.Literal("rotated")
	assert.Same(t, mustNew(t, r1).c, mustNew(t, r2).c)
}

func TestASharedCloneBusyPastTheTimeoutFailsTheFetch(t *testing.T) {
	m := newMonorepo(t, "a", "b")
	c := m.srcs["a"].c
	c.turn <- struct{}{} // a fetch that stalls holding it
	defer c.give()
	b := m.srcs["b"]
	b.cfg.Timeout = 200 * time.Millisecond
	_, err := b.Fetch(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `git source "b"`)
	assert.Contains(t, err.Error(), "stayed busy for the whole fetch timeout of 200ms")
	listings, packs := m.requests()
	assert.Zero(t, listings+packs, "nothing was asked of the server")
}

func TestTheLastSourceClosedRemovesTheSharedClone(t *testing.T) {
	m := newMonorepo(t, "a", "b")
	ctx := context.Background()
	a, b := m.srcs["a"], m.srcs["b"]
	for _, src := range []*Source{a, b} {
		_, err := src.Fetch(ctx)
		require.NoError(t, err)
	}
	c, dir := a.c, a.Dir()
	require.DirExists(t, dir)
	require.NoError(t, a.Close())
	require.NoError(t, a.Close(), "a second Close is a no-op")
	a.cfg.Clones.mu.Lock()
	require.Len(t, a.cfg.Clones.m, 1)
	for _, e := range a.cfg.Clones.m {
		assert.Equal(t, 1, e.users, "b still uses the clone; a is counted once")
	}
	a.cfg.Clones.mu.Unlock()

	// The removal waits for the fetch using the clone.
	c.turn <- struct{}{}
	require.NoError(t, b.Close())
	require.Eventually(t, func() bool { return c.waiting.Load() == 1 }, 10*time.Second, time.Millisecond)
	assert.DirExists(t, dir, "not removed under a fetch")
	c.give()
	require.Eventually(t, func() bool { _, err := os.Stat(dir); return os.IsNotExist(err) }, 10*time.Second, 5*time.Millisecond,
		"removed with its last source")

	// A source of the repository made later clones it again.
	_, packs := m.requests()
	later := mustNew(t, Config{Name: "c", URL: a.cfg.URL, Path: "a", StateDir: a.cfg.StateDir, Clones: a.cfg.Clones})
	assert.Equal(t, dir, later.Dir())
	res, err := later.Fetch(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"x.yaml": "a: v1"}, readAll(t, res.Files))
	_, packs2 := m.requests()
	assert.Equal(t, packs+1, packs2, "cloned anew")
}

func TestASharedCloneTakenUpAgainIsKept(t *testing.T) {
	m := newMonorepo(t, "a")
	ctx := context.Background()
	a := m.srcs["a"]
	_, err := a.Fetch(ctx)
	require.NoError(t, err)
	c := a.c
	c.turn <- struct{}{} // the removal queues behind it
	require.NoError(t, a.Close())
	require.Eventually(t, func() bool { return c.waiting.Load() == 1 }, 10*time.Second, time.Millisecond)
	again := mustNew(t, a.cfg) // the same source made anew, as a driver rebuilt for a new generation
	require.Same(t, c, again.c)
	c.give() // the removal goes first (it waited first), and finds the clone in use

	_, packs := m.requests()
	res, err := again.Fetch(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"x.yaml": "a: v1"}, readAll(t, res.Files))
	_, packs2 := m.requests()
	assert.Equal(t, packs, packs2, "the clone was kept: nothing fetched again")
	assert.DirExists(t, again.Dir())
}

// fetchTogether fetches srcs, which share a clone, as a push webhook
// triggers them: all have asked before the first one's listing begins (the
// clone's turn is held until every one waits for it).
func fetchTogether(t *testing.T, srcs ...*Source) map[*Source]*sources.Result {
	t.Helper()
	c := srcs[0].c
	c.turn <- struct{}{}
	results := make(map[*Source]*sources.Result, len(srcs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, len(srcs))
	for _, src := range srcs {
		wg.Go(func() {
			res, err := src.Fetch(context.Background())
			errs <- err
			mu.Lock()
			results[src] = res
			mu.Unlock()
		})
	}
	require.Eventually(t, func() bool { return c.waiting.Load() == int32(len(srcs)) }, 10*time.Second, time.Millisecond,
		"every fetch waits for the clone")
	c.give()
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	return results
}
