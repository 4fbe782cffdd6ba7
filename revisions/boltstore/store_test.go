package boltstore_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/boltstore"
	"github.com/legate-dev/legate/revisions/outboxtest"
	"github.com/legate-dev/legate/sources"
)

func open(t *testing.T, dir string) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func revision(node, hash string) *revisions.Revision {
	return &revisions.Revision{
		Node: node, Hash: hash,
		Origin: sources.Origin{Kind: sources.KindGit, Ref: "main", Commit: "c-" + hash},
		Config: &render.NodeConfig{NodeID: node, Hash: hash, Types: map[string]render.TypeSet{
			"type.googleapis.com/envoy.config.cluster.v3.Cluster": {Hash: "t" + hash, Resources: []render.Resource{{Name: "a", Body: []byte{0, 1, 2, 255}}}},
		}},
		CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	}
}

func TestCommitAndLoad(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)

	r1, r2 := revision("edge", "h1"), revision("edge", "h2")
	r2.PublishedAt = time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	r1.Taint = &revisions.Taint{
		At:      time.Date(2026, 1, 1, 0, 2, 0, 0, time.UTC),
		Proxies: []revisions.ProxyRejection{{Proxy: "pod-a", Error: "unknown cluster type"}},
		Message: "rejected by 1 of 1 proxies",
	}
	rec := revisions.NodeRecord{
		Node: "edge", History: []string{"h1", "h2"}, Published: "h2", Version: "h2-2", Generation: 2,
		Types:    map[string]revisions.TypeVersion{"type.googleapis.com/envoy.config.cluster.v3.Cluster": {Version: "th2-2", Hash: "th2"}},
		Revision: 1,
	}
	require.NoError(t, s.Commit(ctx, revisions.Update{Record: rec, Put: []*revisions.Revision{r1, r2}}))
	require.NoError(t, s.Commit(ctx, revisions.Update{Record: revisions.NodeRecord{Node: "other", History: []string{"x"}, Revision: 1}, Put: []*revisions.Revision{revision("other", "x")}}))
	require.NoError(t, s.Close())

	s = open(t, dir)
	data, err := s.Load(ctx)
	require.NoError(t, err)
	require.Len(t, data, 2)
	assert.Equal(t, rec, data[0].Record)
	assert.ElementsMatch(t, []*revisions.Revision{r1, r2}, data[0].Revisions)
	assert.Equal(t, "other", data[1].Record.Node)

	rec.History = []string{"h2"}
	rec.Revision = 2
	require.NoError(t, s.Commit(ctx, revisions.Update{Record: rec, Delete: []string{"h1"}}))
	data, err = s.Load(ctx)
	require.NoError(t, err)
	assert.Equal(t, []*revisions.Revision{r2}, data[0].Revisions)
	assert.Equal(t, []string{"h2"}, data[0].Record.History)
}

func TestCommitNeedsNode(t *testing.T) {
	s := open(t, t.TempDir())
	require.Error(t, s.Commit(context.Background(), revisions.Update{}))
}

func TestRefusesNewerSchema(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	require.NoError(t, s.Close())

	db, err := bolt.Open(dir+"/"+boltstore.FileName, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		v := make([]byte, 8)
		binary.BigEndian.PutUint64(v, boltstore.SchemaVersion+1)
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), v)
	}))
	require.NoError(t, db.Close())

	_, err = boltstore.Open(dir)
	require.ErrorContains(t, err, "newer legate")
}

func TestSecondOpenFails(t *testing.T) {
	dir := t.TempDir()
	open(t, dir)
	_, err := boltstore.Open(dir)
	require.ErrorContains(t, err, "in use by another process")
}

func TestOutbox(t *testing.T) {
	dir := t.TempDir()
	var s *boltstore.Store
	outboxtest.Run(t, func(t *testing.T) revisions.Outbox {
		if s != nil {
			require.NoError(t, s.Close())
		}
		s = open(t, dir)
		return s
	})
}
