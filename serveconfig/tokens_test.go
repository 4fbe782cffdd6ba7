package serveconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAdminTokenIsMadeOnceAndKept(t *testing.T) {
	dir := t.TempDir()
	tok, path, err := Config{StateDir: dir}.AdminToken()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, AdminTokenName), path)
	assert.Len(t, tok, 64)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	again, _, err := Config{StateDir: dir}.AdminToken()
	require.NoError(t, err)
	assert.Equal(t, tok, again, "a restart keeps the token")

	own := filepath.Join(t.TempDir(), "tok")
	require.NoError(t, os.WriteFile(own, []byte("  mine\n"), 0o600))
	got, _, err := Config{StateDir: dir, AdminTokenFile: own}.AdminToken()
	require.NoError(t, err)
	assert.Equal(t, "mine", got)
}

// The admin token legate keeps is used only as legate would have made
// it: in a directory no other user may write to, a file of its own user
// that nobody else may read, not a link. Anything else is refused naming
// the path and what to do, instead of granting admin to whoever planted
// or can read it.
func TestKeptAdminTokenMustBePrivate(t *testing.T) {
	for name, tc := range map[string]struct {
		plant func(t *testing.T, dir, path string)
		want  string
	}{
		"shared directory": {func(t *testing.T, dir, _ string) { require.NoError(t, os.Chmod(dir, 0o777)) }, "is writable by other users (mode 0777)"},
		"readable token": {func(t *testing.T, _, path string) {
			require.NoError(t, os.WriteFile(path, []byte("planted\n"), 0o644))
		}, "may be read or written by other users (mode 0644)"},
		"link": {func(t *testing.T, _, path string) {
			target := filepath.Join(t.TempDir(), "tok")
			require.NoError(t, os.WriteFile(target, []byte("planted\n"), 0o600))
			require.NoError(t, os.Symlink(target, path))
		}, "is not a regular file"},
		"another user's token": {func(t *testing.T, _, path string) {
			require.NoError(t, os.WriteFile(path, []byte("planted\n"), 0o600))
			if os.Geteuid() != 0 {
				require.NoError(t, os.Chmod(path, 0o604)) // not root: no chown; another refusal stands in
				return
			}
			require.NoError(t, os.Chown(path, 65534, 65534))
		}, "admin token file"},
		"another user's directory": {func(t *testing.T, dir, _ string) {
			if os.Geteuid() != 0 {
				require.NoError(t, os.Chmod(dir, 0o775))
				return
			}
			require.NoError(t, os.Chown(dir, 65534, 65534))
		}, "state directory"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			require.NoError(t, os.Mkdir(dir, 0o700))
			path := filepath.Join(dir, AdminTokenName)
			tc.plant(t, dir, path)
			_, _, err := Config{StateDir: dir}.AdminToken()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			if os.Geteuid() == 0 && strings.HasPrefix(name, "another user") {
				assert.Contains(t, err.Error(), "belongs to another user (uid 65534)")
			}
		})
	}
	dir := filepath.Join(t.TempDir(), "new")
	_, _, err := Config{StateDir: dir}.AdminToken()
	require.NoError(t, err, "a state directory that does not exist yet is made private")
}
