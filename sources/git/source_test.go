package git

import (
	"context"
	"crypto/rand"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/sources"
)

func readAll(t *testing.T, fsys fs.FS) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		out[p] = string(b)
		return err
	}))
	return out
}

func TestFetchFollowsBranchAndReportsPathChanges(t *testing.T) {
	repo := newTestRepo(t)
	c1 := repo.commit("first config", map[string]string{
		"envoy/listeners.yaml": "listeners: 1",
		"envoy/sub/c.yaml":     "clusters: 1",
		"README.md":            "hello",
	})
	for _, url := range map[string]string{"local path": repo.dir, "file url": "file://" + repo.dir} {
		t.Run(url, func(t *testing.T) {
			src := mustNew(t, Config{Name: "edge", URL: url, Path: "./envoy/"})
			ctx := context.Background()

			res, err := src.Fetch(ctx)
			require.NoError(t, err)
			assert.True(t, res.Changed)
			assert.Equal(t, map[string]string{"listeners.yaml": "listeners: 1", "sub/c.yaml": "clusters: 1"}, readAll(t, res.Files))
			assert.Equal(t, sources.Origin{
				Kind: sources.KindGit, Source: "edge", URL: url, Ref: "main", Path: "envoy",
				Commit: c1, Author: "Ada Author <ada@example.com>", Message: "first config",
			}, res.Origin)
			assert.Equal(t, "main@sha1:"+c1, res.Origin.Revision())

			res, err = src.Fetch(ctx)
			require.NoError(t, err)
			assert.False(t, res.Changed, "nothing changed")
			assert.Equal(t, c1, res.Origin.Commit)
			content := res.Content

			c2 := repo.commit("docs only", map[string]string{"README.md": "hello again"})
			res, err = src.Fetch(ctx)
			require.NoError(t, err)
			assert.False(t, res.Changed, "a commit outside the path does not change the snapshot")
			assert.Equal(t, c2, res.Origin.Commit, "but the new commit is recorded")
			assert.Equal(t, content, res.Content)

			c3 := repo.commit("second config", map[string]string{"envoy/sub/c.yaml": "clusters: 2"})
			res, err = src.Fetch(ctx)
			require.NoError(t, err)
			assert.True(t, res.Changed)
			assert.Equal(t, c3, res.Origin.Commit)
			assert.Equal(t, "clusters: 2", readAll(t, res.Files)["sub/c.yaml"])
			assert.NotEqual(t, content, res.Content)
			// Reset for the next transport.
			repo.git("reset", "-q", "--hard", c1)
		})
	}
}

func TestFetchRefPrecedence(t *testing.T) {
	repo := newTestRepo(t)
	c1 := repo.commit("v1", map[string]string{"f": "1"})
	repo.git("tag", "v1.0.0")
	c2 := repo.commit("v1.1", map[string]string{"f": "2"})
	repo.git("tag", "-a", "-m", "annotated", "v1.1.0")
	c3 := repo.commit("v2", map[string]string{"f": "3"})
	repo.git("tag", "v2.0.0")
	repo.git("branch", "dev", c1)
	repo.git("update-ref", "refs/pull/7/head", c2)
	c4 := repo.commit("tip", map[string]string{"f": "4"})

	tests := []struct {
		name       string
		ref        Ref
		commit     string
		revision   string
		wantErrMsg string
	}{
		{"default branch", Ref{}, c4, "main@sha1:" + c4, ""},
		{"branch", Ref{Branch: "dev"}, c1, "dev@sha1:" + c1, ""},
		{"tag", Ref{Tag: "v1.0.0", Branch: "main"}, c1, "v1.0.0@sha1:" + c1, ""},
		{"annotated tag", Ref{Tag: "v1.1.0"}, c2, "v1.1.0@sha1:" + c2, ""},
		{"semver", Ref{SemVer: "~1", Tag: "v2.0.0"}, c2, "v1.1.0@sha1:" + c2, ""},
		{"semver newest", Ref{SemVer: ">=1"}, c3, "v2.0.0@sha1:" + c3, ""},
		{"name", Ref{Name: "refs/pull/7/head", SemVer: ">=1"}, c2, "refs/pull/7/head@sha1:" + c2, ""},
		{"commit", Ref{Commit: c3, Branch: "main", Tag: "v1.0.0"}, c3, "main@sha1:" + c3, ""},
		{"commit without branch", Ref{Commit: c2}, c2, "HEAD@sha1:" + c2, ""},
		{"commit not on branch", Ref{Commit: c4, Branch: "dev"}, "", "", "is not on dev"},
		{"missing tag", Ref{Tag: "v9"}, "", "", `tag "v9" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := mustNew(t, Config{URL: repo.dir, Ref: tt.ref})
			res, err := src.Fetch(context.Background())
			if tt.wantErrMsg != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErrMsg)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.commit, res.Origin.Commit)
			assert.Equal(t, tt.revision, res.Origin.Revision())
		})
	}
}

func TestFetchOnlyFetchesWhenTheRefMoved(t *testing.T) {
	root := t.TempDir()
	repo := newTestRepo(t)
	repo.commit("one", map[string]string{"a.yaml": "1"})
	bare := filepath.Join(root, "cfg.git")
	repo.git("clone", "-q", "--bare", repo.dir, bare)
	srv := serveGitHTTP(t, root, nil)

	state := t.TempDir()
	src := mustNew(t, Config{URL: srv.URL + "/cfg.git", StateDir: state})
	_, err := src.Fetch(context.Background())
	require.NoError(t, err)
	assert.EqualValues(t, 1, srv.fetches.Load())

	_, err = src.Fetch(context.Background())
	require.NoError(t, err)
	assert.EqualValues(t, 1, srv.fetches.Load(), "an unmoved ref needs no fetch")

	// A new Source on the same state directory reuses the persistent clone.
	again := mustNew(t, Config{URL: srv.URL + "/cfg.git", StateDir: state})
	res, err := again.Fetch(context.Background())
	require.NoError(t, err)
	assert.EqualValues(t, 1, srv.fetches.Load(), "the clone survives a restart")
	assert.True(t, res.Changed, "the first fetch of a process reports a change")

	repo.commit("two", map[string]string{"a.yaml": "2"})
	repo.git("push", "-q", bare, "main")
	res, err = again.Fetch(context.Background())
	require.NoError(t, err)
	assert.EqualValues(t, 2, srv.fetches.Load())
	assert.Equal(t, "2", readAll(t, res.Files)["a.yaml"])
}

func TestFetchLimits(t *testing.T) {
	repo := newTestRepo(t)
	repo.commit("big", map[string]string{"cfg/a.yaml": string(make([]byte, 4096)), "cfg/b.yaml": "b", "cfg/c.yaml": "c"})

	_, err := mustNew(t, Config{URL: repo.dir, Path: "cfg", MaxCheckoutSize: 1024}).Fetch(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exceed the checkout size limit")

	_, err = mustNew(t, Config{URL: repo.dir, Path: "cfg", MaxFiles: 2}).Fetch(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "more than 2 files")

	_, err = mustNew(t, Config{URL: repo.dir, MaxRepoSize: 16}).Fetch(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "over the repository size limit")

	_, err = mustNew(t, Config{URL: repo.dir, Path: "nope"}).Fetch(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `path "nope" does not exist`)
}

func TestFetchRejectsSymlinks(t *testing.T) {
	repo := newTestRepo(t)
	repo.commit("files", map[string]string{"cfg/a.yaml": "a"})
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(repo.dir, "cfg", "link.yaml")))
	repo.commit("link", nil)
	_, err := mustNew(t, Config{URL: repo.dir, Path: "cfg"}).Fetch(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cfg/link.yaml is a symbolic link")
}

func TestShallowFetchFollowsNewCommits(t *testing.T) {
	root := t.TempDir()
	repo := newTestRepo(t)
	for i := range 5 {
		repo.commit("c", map[string]string{"a.yaml": string(rune('a' + i))})
	}
	bare := filepath.Join(root, "cfg.git")
	repo.git("clone", "-q", "--bare", repo.dir, bare)
	srv := serveGitHTTP(t, root, nil)
	src := mustNew(t, Config{URL: srv.URL + "/cfg.git", Depth: 1})
	_, err := src.Fetch(context.Background())
	require.NoError(t, err)

	c := repo.commit("next", map[string]string{"a.yaml": "z"})
	repo.git("push", "-q", bare, "main")
	res, err := src.Fetch(context.Background())
	require.NoError(t, err)
	assert.Equal(t, c, res.Origin.Commit)
	assert.Equal(t, "z", readAll(t, res.Files)["a.yaml"])
}

// A repository far over the size limit is stopped while it arrives: the
// clone never grows past the limit on disk, and the error says so.
func TestHugeRepositoryIsStoppedWhileFetching(t *testing.T) {
	repo := newTestRepo(t)
	big := make([]byte, 4<<20)
	_, err := rand.Read(big) // incompressible
	require.NoError(t, err)
	repo.commit("big", map[string]string{"cfg/blob.bin": string(big), "cfg/a.yaml": "a"})
	root := t.TempDir()
	repo.git("clone", "-q", "--bare", repo.dir, filepath.Join(root, "cfg.git"))
	url := serveGitHTTP(t, root, nil).URL + "/cfg.git"

	const limit = 256 << 10
	state := t.TempDir()
	src := mustNew(t, Config{URL: url, MaxRepoSize: limit, StateDir: state, Timeout: 20 * time.Second})
	_, err = src.Fetch(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stopped while receiving it")
	size, err := dirSize(state)
	require.NoError(t, err)
	assert.LessOrEqual(t, size, int64(limit), "nothing past the limit stays on disk")

	// Within the limit, the same source fetches.
	res, err := mustNew(t, Config{URL: url, Path: "cfg", StateDir: t.TempDir()}).Fetch(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "a", readAll(t, res.Files)["a.yaml"])
}

// An incremental fetch offers the server the clone's tip and a few of its
// ancestors, never the whole history, and still follows a ref that was
// rewritten.
func TestFetchOffersFewHavesAndFollowsAForcePush(t *testing.T) {
	root := t.TempDir()
	repo := newTestRepo(t)
	for i := range 3 * maxHaves {
		repo.commit("c", map[string]string{"a.yaml": fmt.Sprint(i)})
	}
	bare := filepath.Join(root, "cfg.git")
	repo.git("clone", "-q", "--bare", repo.dir, bare)
	srv := serveGitHTTP(t, root, nil)
	src := mustNew(t, Config{URL: srv.URL + "/cfg.git"})
	_, err := src.Fetch(context.Background())
	require.NoError(t, err)
	assert.EqualValues(t, 0, srv.haves.Load(), "a first clone has nothing to offer")

	repo.commit("next", map[string]string{"a.yaml": "next"})
	repo.git("push", "-q", bare, "main")
	wire := srv.sent.Load()
	res, err := src.Fetch(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "next", readAll(t, res.Files)["a.yaml"])
	assert.EqualValues(t, maxHaves, srv.haves.Load())
	assert.Less(t, srv.sent.Load()-wire, int64(2048), "only the new commit travels")

	// Rewrite the last two commits and force-push.
	repo.git("reset", "-q", "--hard", "HEAD~2")
	c := repo.commit("rewritten", map[string]string{"a.yaml": "rewritten"})
	repo.git("push", "-q", "-f", bare, "main")
	res, err = src.Fetch(context.Background())
	require.NoError(t, err)
	assert.Equal(t, c, res.Origin.Commit)
	assert.Equal(t, "rewritten", readAll(t, res.Files)["a.yaml"])
}
