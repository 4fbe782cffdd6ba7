package sources

import (
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTreeIsAValidFS(t *testing.T) {
	tree, err := NewTree(map[string][]byte{
		"a.yaml":         []byte("a"),
		"dir/b.yaml":     []byte("bb"),
		"dir/sub/c.yaml": []byte("ccc"),
	})
	require.NoError(t, err)
	require.NoError(t, fstest.TestFS(tree, "a.yaml", "dir/b.yaml", "dir/sub/c.yaml"))
	assert.Equal(t, []string{"a.yaml", "dir/b.yaml", "dir/sub/c.yaml"}, tree.Paths())

	data, err := fs.ReadFile(tree, "dir/sub/c.yaml")
	require.NoError(t, err)
	assert.Equal(t, "ccc", string(data))
	_, err = tree.Open("missing")
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, err = tree.Open("../a.yaml")
	assert.ErrorIs(t, err, fs.ErrInvalid)
}

func TestNewTreeRejectsBadPaths(t *testing.T) {
	for _, files := range []map[string][]byte{
		{"../x": nil},
		{"/abs": nil},
		{"a/./b": nil},
		{"a": nil, "a/b": nil},
	} {
		_, err := NewTree(files)
		assert.Error(t, err, "%v", files)
	}
}

func TestCleanPath(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "."},
		{".", "."},
		{"./envoy/", "envoy"},
		{"/envoy", "envoy"},
		{"a/../b", "b"},
		{"../../etc", "etc"},
	}
	for _, tt := range tests {
		got, err := CleanPath(tt.in)
		require.NoError(t, err)
		assert.Equal(t, tt.want, got, tt.in)
	}
	_, err := CleanPath(`a\b`)
	assert.Error(t, err)
}
