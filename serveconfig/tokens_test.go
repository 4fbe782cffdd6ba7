package serveconfig

import (
	"os"
	"path/filepath"
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
