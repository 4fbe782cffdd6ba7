package git

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLocalReadsRevisionsWithoutTheWorkTree(t *testing.T) {
	r := newTestRepo(t)
	first := r.commit("first", map[string]string{"envoy/nodes/a/c.yaml": "one\n", "README.md": "x\n"})
	r.commit("second", map[string]string{"envoy/nodes/a/c.yaml": "two\n", "envoy/nodes/b/c.yaml": "new\n"})
	// Uncommitted work is not what a revision holds.
	require.NoError(t, os.WriteFile(filepath.Join(r.dir, "envoy/nodes/a/c.yaml"), []byte("dirty\n"), 0o600))

	l, err := OpenLocal(filepath.Join(r.dir, "envoy"))
	require.NoError(t, err)
	assert.Equal(t, "envoy", l.Path)

	snap, err := l.Read(first)
	require.NoError(t, err)
	assert.Equal(t, first, snap.Origin.Commit)
	data, err := fs.ReadFile(snap.Files, "nodes/a/c.yaml")
	require.NoError(t, err)
	assert.Equal(t, "one\n", string(data))
	_, err = fs.Stat(snap.Files, "nodes/b/c.yaml")
	require.ErrorIs(t, err, fs.ErrNotExist)

	for _, rev := range []string{"main", "HEAD"} {
		snap, err = l.Read(rev)
		require.NoError(t, err, rev)
		data, err = fs.ReadFile(snap.Files, "nodes/a/c.yaml")
		require.NoError(t, err)
		assert.Equal(t, "two\n", string(data), rev)
	}
	snap, err = l.Read("HEAD~1")
	require.NoError(t, err)
	assert.Equal(t, first, snap.Origin.Commit)

	_, err = l.Read("no-such-branch")
	require.ErrorContains(t, err, `revision "no-such-branch": no such branch, tag or commit`)

	dirty, err := os.ReadFile(filepath.Join(r.dir, "envoy/nodes/a/c.yaml"))
	require.NoError(t, err)
	assert.Equal(t, "dirty\n", string(dirty), "the work tree is left as it was")
}

func TestLocalPathMissingAtRevision(t *testing.T) {
	r := newTestRepo(t)
	first := r.commit("first", map[string]string{"README.md": "x\n"})
	r.commit("second", map[string]string{"envoy/nodes/a/c.yaml": "one\n"})
	l, err := OpenLocal(filepath.Join(r.dir, "envoy"))
	require.NoError(t, err)
	_, err = l.Read(first)
	require.ErrorContains(t, err, `path "envoy" does not exist at commit `+first)
}

func TestOpenLocalOutsideARepository(t *testing.T) {
	_, err := OpenLocal(t.TempDir())
	require.ErrorContains(t, err, "repository at ")
}
