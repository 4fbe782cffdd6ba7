package boltstore

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCommitsAreSynced checks that the store is opened as bbolt syncs
// every commit (fdatasync before it acknowledges): NoSync or a skipped
// freelist would make an acknowledged revision depend on the page cache.
func TestCommitsAreSynced(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	assert.False(t, st.db.NoSync, "every commit is synced to disk")
	assert.False(t, st.db.NoFreelistSync, "the freelist is written with each commit, as legate never rebuilds it")
}
