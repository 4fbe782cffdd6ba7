package boltstore_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/boltstore"
)

// A state written apart overlays the content's; content written again
// carries its own state and the one apart is dropped.
func TestStatesOverlayContent(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	r := revision("edge", "h1")
	rec := revisions.NodeRecord{Node: "edge", History: []string{"h1"}, Published: "h1", Revision: 1}
	require.NoError(t, s.Commit(ctx, revisions.Update{Record: rec, Put: []*revisions.Revision{r}}))

	taint := &revisions.Taint{At: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), Message: "rejected by 1 of 1 proxies"}
	st := revisions.StateOf(r)
	st.Taint = taint
	st.Origin.Commit = "c-newer"
	rec.Revision = 2
	require.NoError(t, s.Commit(ctx, revisions.Update{Record: rec, States: []revisions.RevisionState{st}}))
	data, err := s.Load(ctx)
	require.NoError(t, err)
	require.Len(t, data[0].Revisions, 1)
	assert.Equal(t, r.WithState(st), data[0].Revisions[0])

	rec.Revision = 3
	require.NoError(t, s.Commit(ctx, revisions.Update{Record: rec, Put: []*revisions.Revision{r}}))
	data, err = s.Load(ctx)
	require.NoError(t, err)
	assert.Equal(t, r, data[0].Revisions[0], "the content written last carries the state")

	rec.Revision = 4
	st.Hash = "unknown"
	err = s.Commit(ctx, revisions.Update{Record: rec, States: []revisions.RevisionState{st}})
	assert.ErrorContains(t, err, "state of revision unknown, whose content is not stored")
	data, err = s.Load(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), data[0].Record.Revision, "a refused update changes nothing")
}

// An update not made from the stored record is a conflict.
func TestCommitReportsAConflict(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	rec := revisions.NodeRecord{Node: "edge", History: []string{"h1"}, Revision: 1}
	require.NoError(t, s.Commit(ctx, revisions.Update{Record: rec, Put: []*revisions.Revision{revision("edge", "h1")}}))
	err := s.Commit(ctx, revisions.Update{Record: rec})
	require.ErrorIs(t, err, revisions.ErrConflict, "the same revision twice: another writer")
	rec.Revision = 5
	require.ErrorIs(t, s.Commit(ctx, revisions.Update{Record: rec}), revisions.ErrConflict)
	rec.Revision = 2
	require.NoError(t, s.Commit(ctx, revisions.Update{Record: rec}))
}

// A state directory written by schema 1 (a revision's state inside its
// content, no record revisions) loads as it was, and is marked 2.
func TestSchemaOneLoads(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := revision("edge", "h1")
	r.Taint = &revisions.Taint{At: time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC), Message: "rejected by 2 of 2 proxies; pod-a: bad"}
	r.PublishedAt = time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	writeSchemaOne(t, filepath.Join(dir, boltstore.FileName), r)

	s := open(t, dir)
	data, err := s.Load(ctx)
	require.NoError(t, err)
	require.Len(t, data, 1)
	assert.Equal(t, "edge", data[0].Record.Node)
	assert.Equal(t, uint64(0), data[0].Record.Revision)
	require.Len(t, data[0].Revisions, 1)
	assert.Equal(t, r, data[0].Revisions[0], "the taint written inside the content is kept")

	// The engine goes on from it: a state change is written apart.
	st := revisions.StateOf(r)
	st.Taint = nil
	rec := data[0].Record
	rec.Revision = 1
	require.NoError(t, s.Commit(ctx, revisions.Update{Record: rec, States: []revisions.RevisionState{st}}))
	data, err = s.Load(ctx)
	require.NoError(t, err)
	assert.Nil(t, data[0].Revisions[0].Taint)
	require.NoError(t, s.Close())

	db, err := bolt.Open(filepath.Join(dir, boltstore.FileName), 0o600, nil)
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	require.NoError(t, db.View(func(tx *bolt.Tx) error {
		assert.Equal(t, uint64(boltstore.SchemaVersion), binary.BigEndian.Uint64(tx.Bucket([]byte("meta")).Get([]byte("schema"))))
		return nil
	}))
}

// writeSchemaOne writes the layout of schema 1 by hand: meta, nodes,
// revisions (a revision's JSON with its state), outbox buckets.
func writeSchemaOne(t *testing.T, path string, r *revisions.Revision) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	rec, err := json.Marshal(map[string]any{"node": r.Node, "history": []string{r.Hash}, "generation": 3})
	require.NoError(t, err)
	rev, err := json.Marshal(r)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucket([]byte("meta"))
		if err != nil {
			return err
		}
		if err := meta.Put([]byte("schema"), binary.BigEndian.AppendUint64(nil, 1)); err != nil {
			return err
		}
		nodes, err := tx.CreateBucket([]byte("nodes"))
		if err != nil {
			return err
		}
		if err := nodes.Put([]byte(r.Node), rec); err != nil {
			return err
		}
		revs, err := tx.CreateBucket([]byte("revisions"))
		if err != nil {
			return err
		}
		b, err := revs.CreateBucket([]byte(r.Node))
		if err != nil {
			return err
		}
		if err := b.Put([]byte(r.Hash), rev); err != nil {
			return err
		}
		for _, name := range []string{"outbox", "outboxKeys"} {
			if _, err := tx.CreateBucket([]byte(name)); err != nil {
				return err
			}
		}
		return nil
	}))
}
