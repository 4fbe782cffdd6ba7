package boltstore_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/boltstore"
)

// A bbolt file another program made is refused, not adopted and written to.
func TestRefusesAForeignBoltFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, boltstore.FileName)
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("their-data"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), []byte("v"))
	}))
	require.NoError(t, db.Close())
	before, err := os.ReadFile(path)
	require.NoError(t, err)

	_, err = boltstore.Open(dir)
	require.ErrorContains(t, err, "not created by legate")
	assert.Contains(t, err.Error(), path)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the foreign file is left as it was")

	// An empty bbolt file (a crash right after it was made) becomes a store.
	empty := t.TempDir()
	db, err = bolt.Open(filepath.Join(empty, boltstore.FileName), 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	s, err := boltstore.Open(empty)
	require.NoError(t, err)
	require.NoError(t, s.Close())
}

// Data pages overwritten with random bytes give an error that says what
// to do, never a panic, at open or at load.
func TestCorruptPagesAreAnErrorNotAPanic(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(8) {
		dir := t.TempDir()
		s := open(t, dir)
		for i := range 20 {
			r := revision("edge", "h"+string(rune('a'+i)))
			require.NoError(t, s.Commit(ctx, revisions.Update{Record: revisions.NodeRecord{Node: "edge", History: []string{r.Hash}, Revision: uint64(i + 1)}, Put: []*revisions.Revision{r}}))
		}
		require.NoError(t, s.Close())

		path := filepath.Join(dir, boltstore.FileName)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		page := os.Getpagesize()
		rng := rand.New(rand.NewPCG(seed, 42))
		for i := 2 * page; i < len(data); i++ { // keep the two meta pages
			data[i] = byte(rng.UintN(256))
		}
		require.NoError(t, os.WriteFile(path, data, 0o600))

		require.NotPanics(t, func() {
			st, err := boltstore.Open(dir)
			if err == nil {
				_, err = st.Load(ctx)
				_ = st.Close()
			}
			require.Error(t, err, "seed %d", seed)
			assert.ErrorIs(t, err, boltstore.ErrCorrupt, "seed %d: %v", seed, err)
			assert.Contains(t, err.Error(), "move the file away")
		})
	}
}
