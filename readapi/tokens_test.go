package readapi_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/readapi"
)

// A token file's content is the token, without surrounding white space;
// a missing or empty file is an error naming the setting (and the file).
func TestTokenFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(good, []byte("  r3ad-t0ken\n"), 0o600))
	got, err := readapi.TokenFile("readTokenFile", good)
	require.NoError(t, err)
	assert.Equal(t, "r3ad-t0ken", got)

	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte(" \n"), 0o600))
	_, err = readapi.TokenFile("readTokenFile", empty)
	assert.EqualError(t, err, "readTokenFile: the file "+empty+" is empty")

	_, err = readapi.TokenFile("readTokenFile", filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.ErrorContains(t, err, "readTokenFile: ")
	assert.ErrorContains(t, err, filepath.Join(dir, "missing"), "the file is named")
}
