// Package boltstore is the embedded revisions.Store of the standalone home:
// one bbolt file under --state-dir holding every node's revisions (their
// rendered content written once, their state — origin, publication time,
// taint — apart), history order, publication pointer and version counters,
// and the reporters' outbox.
//
// Every write is one bbolt transaction, fsynced before it returns, so a
// kill -9 at any point leaves either the old or the new state. The file
// carries a schema version in its meta bucket; a file written by a newer
// schema is refused rather than misread.
package boltstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
)

// SchemaVersion is the layout this package reads and writes. Version 2
// keeps revisions' state (origin, publication time, taint) apart from
// their content; it reads version 1 files, whose revisions carry their
// state inside, and marks them 2 on open, so that an older legate, which
// would miss the separate state, refuses them.
const SchemaVersion = 2

// MaxRevisionBytes bounds one revision's encoded content. bbolt holds far
// more; the bound keeps one commit's write (and the memory to load it) sane.
const MaxRevisionBytes = 64 << 20

// FileName is the database file inside the state directory.
const FileName = "legate.db"

var (
	bucketMeta       = []byte("meta")
	bucketNodes      = []byte("nodes")           // node ID -> JSON NodeRecord
	bucketRevisions  = []byte("revisions")       // node ID -> bucket of hash -> JSON Revision (content, and its state when written)
	bucketStates     = []byte("states")          // node ID -> bucket of hash -> JSON RevisionState, newer than the content's
	bucketRecordRevs = []byte("recordRevisions") // node ID -> 8-byte big-endian NodeRecord.Revision
	bucketOutbox     = []byte("outbox")          // 8-byte big-endian seq -> JSON outboxValue
	bucketOutboxKeys = []byte("outboxKeys")
	keySchema        = []byte("schema")
)

// Store is a revisions.Store and revisions.Outbox on bbolt. It is safe for
// concurrent use: bbolt serializes writers and readers see a consistent
// snapshot.
type Store struct {
	db   *bolt.DB
	path string
}

var (
	_ revisions.Store  = (*Store)(nil)
	_ revisions.Outbox = (*Store)(nil)
)

// Open opens (creating if needed) the store in dir. Only one process may
// have it open; another waits up to two seconds and then fails.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create state dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, FileName)
	var db *bolt.DB
	err := recovered(path, func() error {
		var err error
		db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
		return err
	})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("state dir %s is in use by another process: %w", dir, err)
		}
		return nil, fmt.Errorf("open state file %s: %w", path, err)
	}
	st := &Store{db: db, path: path}
	if err := st.update(initSchema); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("state file %s: %w", path, err)
	}
	return st, nil
}

// ErrCorrupt marks a state file whose pages bbolt cannot read.
var ErrCorrupt = errors.New("the state file is corrupt")

// recovered runs fn, turning a bbolt panic (bbolt panics on pages it cannot
// make sense of) into an error that tells the operator what to do.
func recovered(path string, fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %s (%v): stop legate, move the file away (or restore a backup) and start again; "+
				"revisions are rendered again from the sources, but taints and unsent commit statuses are lost", ErrCorrupt, path, v)
		}
	}()
	return fn()
}

// update and view run a transaction, a corrupt page turned into ErrCorrupt.
func (s *Store) update(fn func(*bolt.Tx) error) error {
	return recovered(s.path, func() error { return s.db.Update(fn) })
}

func (s *Store) view(fn func(*bolt.Tx) error) error {
	return recovered(s.path, func() error { return s.db.View(fn) })
}

func initSchema(tx *bolt.Tx) error {
	if m := tx.Bucket(bucketMeta); m == nil || m.Get(keySchema) == nil {
		// Only an empty file is made a legate store: a bbolt file of
		// another program is refused rather than written to.
		empty := true
		_ = tx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return nil })
		if !empty {
			return errors.New("this bbolt file was not created by legate (it has no legate schema marker); point --state-dir at another directory or move the file away")
		}
	}
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	if v := meta.Get(keySchema); v != nil {
		if len(v) != 8 {
			return errors.New("schema version is unreadable; the file is not a legate state file")
		}
		got := binary.BigEndian.Uint64(v)
		if got > SchemaVersion {
			return fmt.Errorf("written by a newer legate (schema %d, this one reads %d): upgrade legate or use another --state-dir", got, SchemaVersion)
		}
	}
	if err := meta.Put(keySchema, u64(SchemaVersion)); err != nil {
		return err
	}
	for _, b := range [][]byte{bucketNodes, bucketRevisions, bucketStates, bucketRecordRevs, bucketOutbox, bucketOutboxKeys} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

// Load returns every node with its revisions.
func (s *Store) Load(_ context.Context) ([]revisions.NodeData, error) {
	var out []revisions.NodeData
	err := s.view(func(tx *bolt.Tx) error {
		revs, states := tx.Bucket(bucketRevisions), tx.Bucket(bucketStates)
		return tx.Bucket(bucketNodes).ForEach(func(k, v []byte) error {
			var d revisions.NodeData
			if err := json.Unmarshal(v, &d.Record); err != nil {
				return fmt.Errorf("decode record of node %q: %w", k, err)
			}
			sb := states.Bucket(k)
			if b := revs.Bucket(k); b != nil {
				if err := b.ForEach(func(h, v []byte) error {
					r := &revisions.Revision{}
					if err := json.Unmarshal(v, r); err != nil {
						return fmt.Errorf("decode revision %s of node %q: %w", h, k, err)
					}
					if sb != nil {
						if sv := sb.Get(h); sv != nil {
							var st revisions.RevisionState
							if err := json.Unmarshal(sv, &st); err != nil {
								return fmt.Errorf("decode the state of revision %s of node %q: %w", h, k, err)
							}
							r = r.WithState(st)
						}
					}
					d.Revisions = append(d.Revisions, r)
					return nil
				}); err != nil {
					return err
				}
			}
			out = append(out, d)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("load revisions: %w", err)
	}
	return out, nil
}

// Commit applies u in one transaction.
func (s *Store) Commit(_ context.Context, u revisions.Update) error {
	if u.Record.Node == "" {
		return errors.New("commit needs a node ID")
	}
	rec, err := json.Marshal(u.Record)
	if err != nil {
		return fmt.Errorf("encode record of node %q: %w", u.Record.Node, err)
	}
	vals := make([][]byte, len(u.Put))
	for i, r := range u.Put {
		if vals[i], err = json.Marshal(r); err != nil {
			return fmt.Errorf("encode revision %s of node %q: %w", r.Hash, u.Record.Node, err)
		}
	}
	stateVals := make([][]byte, len(u.States))
	for i, st := range u.States {
		if stateVals[i], err = json.Marshal(st); err != nil {
			return fmt.Errorf("encode the state of revision %s of node %q: %w", st.Hash, u.Record.Node, err)
		}
	}
	node := []byte(u.Record.Node)
	err = s.update(func(tx *bolt.Tx) error {
		if err := checkRevision(tx, u.Record); err != nil {
			return err
		}
		b, err := tx.Bucket(bucketRevisions).CreateBucketIfNotExists(node)
		if err != nil {
			return err
		}
		// The states bucket of the node is made when a state is first
		// written apart; until then there is nothing to delete in it.
		sb := tx.Bucket(bucketStates).Bucket(node)
		if sb == nil && len(u.States) > 0 {
			if sb, err = tx.Bucket(bucketStates).CreateBucket(node); err != nil {
				return err
			}
		}
		for i, r := range u.Put {
			// The content carries its state: a separate one is older.
			if err := b.Put([]byte(r.Hash), vals[i]); err != nil {
				return err
			}
			if sb != nil {
				if err := sb.Delete([]byte(r.Hash)); err != nil {
					return err
				}
			}
		}
		for i, st := range u.States {
			if b.Get([]byte(st.Hash)) == nil {
				return fmt.Errorf("state of revision %s, whose content is not stored", st.Hash)
			}
			if err := sb.Put([]byte(st.Hash), stateVals[i]); err != nil {
				return err
			}
		}
		for _, h := range u.Delete {
			if err := b.Delete([]byte(h)); err != nil {
				return err
			}
			if sb != nil {
				if err := sb.Delete([]byte(h)); err != nil {
					return err
				}
			}
		}
		return tx.Bucket(bucketNodes).Put(node, rec)
	})
	if err != nil {
		return fmt.Errorf("write revisions of node %q: %w", u.Record.Node, err)
	}
	return nil
}

type outboxValue struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// checkRevision refuses a record that is not the next of the stored one,
// and records its revision. A record written before revisions were kept
// is at 0.
func checkRevision(tx *bolt.Tx, rec revisions.NodeRecord) error {
	b := tx.Bucket(bucketRecordRevs)
	var stored uint64
	if v := b.Get([]byte(rec.Node)); len(v) == 8 {
		stored = binary.BigEndian.Uint64(v)
	}
	if rec.Revision != stored+1 {
		return fmt.Errorf("%w: node %q is at record revision %d, the update was made from %d", revisions.ErrConflict, rec.Node, stored, rec.Revision-1)
	}
	return b.Put([]byte(rec.Node), u64(rec.Revision))
}

// RevisionSize implements revisions.SizeLimit.
func (s *Store) RevisionSize(cfg *render.NodeConfig) (size, limit int) {
	return revisions.EncodedSize(cfg), MaxRevisionBytes
}

// OutboxPut queues value under key, replacing an entry with the same key.
func (s *Store) OutboxPut(_ context.Context, key string, value []byte) (uint64, error) {
	var seq uint64
	err := s.update(func(tx *bolt.Tx) error {
		ob, keys := tx.Bucket(bucketOutbox), tx.Bucket(bucketOutboxKeys)
		if old := keys.Get([]byte(key)); old != nil {
			if err := ob.Delete(old); err != nil {
				return err
			}
		}
		var err error
		if seq, err = ob.NextSequence(); err != nil {
			return err
		}
		v, err := json.Marshal(outboxValue{Key: key, Value: value})
		if err != nil {
			return err
		}
		if err := ob.Put(u64(seq), v); err != nil {
			return err
		}
		return keys.Put([]byte(key), u64(seq))
	})
	if err != nil {
		return 0, fmt.Errorf("queue outbox entry %q: %w", key, err)
	}
	return seq, nil
}

// OutboxList returns up to limit entries, oldest first.
func (s *Store) OutboxList(_ context.Context, limit int) ([]revisions.OutboxEntry, error) {
	var out []revisions.OutboxEntry
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketOutbox).Cursor()
		for k, v := c.First(); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Next() {
			var ov outboxValue
			if err := json.Unmarshal(v, &ov); err != nil {
				return fmt.Errorf("decode outbox entry %d: %w", binary.BigEndian.Uint64(k), err)
			}
			out = append(out, revisions.OutboxEntry{Seq: binary.BigEndian.Uint64(k), Key: ov.Key, Value: ov.Value})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list outbox: %w", err)
	}
	return out, nil
}

// OutboxDelete removes the entry with seq, if it is still queued.
func (s *Store) OutboxDelete(_ context.Context, seq uint64) error {
	err := s.update(func(tx *bolt.Tx) error {
		ob, keys := tx.Bucket(bucketOutbox), tx.Bucket(bucketOutboxKeys)
		v := ob.Get(u64(seq))
		if v == nil {
			return nil
		}
		var ov outboxValue
		if err := json.Unmarshal(v, &ov); err != nil {
			return fmt.Errorf("decode outbox entry %d: %w", seq, err)
		}
		if cur := keys.Get([]byte(ov.Key)); cur != nil && binary.BigEndian.Uint64(cur) == seq {
			if err := keys.Delete([]byte(ov.Key)); err != nil {
				return err
			}
		}
		return ob.Delete(u64(seq))
	})
	if err != nil {
		return fmt.Errorf("delete outbox entry %d: %w", seq, err)
	}
	return nil
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}
