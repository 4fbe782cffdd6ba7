package sources

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A checkout whose links lead, hop after hop, out of it or to a device:
// none of it is read, each refusal names the file asked for, and the
// links that stay inside still work.
func TestDirFSKeepsLinksInside(t *testing.T) {
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.yaml"), []byte("password: hunter2\n"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(outside, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "other.yaml"), []byte("password: hunter2\n"), 0o600))
	dir := t.TempDir()
	in := func(p string) string { return filepath.Join(dir, p) }
	require.NoError(t, os.MkdirAll(in("conf/real"), 0o755))
	require.NoError(t, os.WriteFile(in("conf/real/a.yaml"), []byte("a: 1\n"), 0o600))
	links := map[string]string{
		"dev":           "/dev",       // a directory link out, harmless alone
		"zero.yaml":     "dev/zero",   // ... that a second hop reads through
		"out":           outside,      // absolute
		"up":            "conf/../..", // relative, above the root
		"secret.yaml":   "up/" + filepath.Base(outside) + "/secret.yaml",
		"conf/dotdot":   "real/../../up", // ".." after a real directory, then out
		"conf/via.yaml": "dotdot/" + filepath.Base(outside) + "/secret.yaml",
		// Lexically "other.yaml" of the root; the kernel goes through deep
		// first, then up from where it leads: outside.
		"deep":              "up/" + filepath.Base(outside) + "/sub",
		"trick.yaml":        "deep/../other.yaml",
		"loop1.yaml":        "loop2.yaml",
		"loop2.yaml":        "loop1.yaml",
		"inside.yaml":       "conf/real/a.yaml",
		"conf/alias":        "real",
		"conf/twohops.yaml": "alias/a.yaml",
	}
	for name, target := range links {
		require.NoError(t, os.Symlink(target, in(name)))
	}
	require.NoError(t, syscall.Mkfifo(in("fifo.yaml"), 0o600))

	fsys := DirFS(dir)
	for name, want := range map[string]error{
		"zero.yaml":          ErrLinkOutside,
		"out/secret.yaml":    ErrLinkOutside,
		"secret.yaml":        ErrLinkOutside,
		"conf/via.yaml":      ErrLinkOutside,
		"trick.yaml":         ErrLinkOutside,
		"loop1.yaml":         ErrLinkLoop,
		"fifo.yaml":          ErrNotRegular,
		"conf/missing.yaml":  fs.ErrNotExist,
		"conf/../conf/a.yml": fs.ErrInvalid,
	} {
		_, err := fs.ReadFile(fsys, name)
		require.ErrorIs(t, err, want, name)
		assert.Contains(t, err.Error(), name, "the refusal names the file asked for")
		info, err := fs.Stat(fsys, name)
		if errors.Is(want, ErrNotRegular) {
			require.NoError(t, err, "Stat describes what Open refuses")
			assert.False(t, info.Mode().IsRegular())
			continue
		}
		assert.ErrorIs(t, err, want, name)
	}
	for _, name := range []string{"inside.yaml", "conf/twohops.yaml", "conf/alias/a.yaml", "conf/real/a.yaml"} {
		data, err := fs.ReadFile(fsys, name)
		require.NoError(t, err, name)
		assert.Equal(t, "a: 1\n", string(data), name)
	}
	target, err := fs.ReadLink(fsys, "conf/twohops.yaml")
	require.NoError(t, err)
	assert.Equal(t, "alias/a.yaml", target)
	info, err := fs.Lstat(fsys, "zero.yaml")
	require.NoError(t, err)
	assert.NotZero(t, info.Mode()&fs.ModeSymlink, "Lstat does not follow")
	entries, err := fs.ReadDir(fsys, "conf")
	require.NoError(t, err)
	assert.Len(t, entries, 5)
}
