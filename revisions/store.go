package revisions

import (
	"context"
	"errors"
)

// ErrNotFound is returned (wrapped) for an unknown node or revision.
var ErrNotFound = errors.New("not found")

// NodeRecord is the persisted bookkeeping of one node ID: the history order,
// the publication in place and the counters its versions are made from.
type NodeRecord struct {
	Node string `json:"node"`
	// History lists revision hashes, newest first.
	History []string `json:"history"`
	// Published is the hash of the revision served; "" if none.
	Published string `json:"published,omitempty"`
	// Version is the Publication.Version it was served under.
	Version string `json:"version,omitempty"`
	// Generation counts the node's publications; every publication takes
	// the next number, so versions are never reused.
	Generation uint64 `json:"generation"`
	// Types are the per-type versions of the publication in place.
	Types map[string]TypeVersion `json:"types,omitempty"`
}

// NodeData is everything stored for one node ID.
type NodeData struct {
	Record    NodeRecord
	Revisions []*Revision
}

// Update is one atomic change to a node: its new record, the revisions to
// write (new ones, or changed origin, times or taint) and the hashes of
// revisions to delete (pruned from the history).
type Update struct {
	Record NodeRecord
	Put    []*Revision
	Delete []string
}

// Store persists revisions. It is deliberately small so that a Kubernetes
// home can implement it with custom resources (a revision object per
// revision, the record in the status of a per-node object).
//
// Contract:
//   - Commit applies an Update all or nothing, and once it returns nil the
//     change survives a crash of the process. An implementation that cannot
//     write several objects atomically must write Put first, then Record,
//     then Delete, so that a crash at any point leaves every hash in a
//     record's History readable; stray revisions that no history refers to
//     are ignored by the engine and deleted by a later prune.
//   - Load returns every node with its revisions. It is called once, before
//     any Commit.
//   - The Engine calls Load and Commit from one goroutine at a time;
//     implementations need not serialize them, but must be safe to use
//     alongside Outbox calls from other goroutines.
type Store interface {
	Load(ctx context.Context) ([]NodeData, error)
	Commit(ctx context.Context, u Update) error
}

// OutboxEntry is one queued message, for example a commit status not yet
// delivered to its forge.
type OutboxEntry struct {
	// Seq orders entries: a later Put has a higher Seq.
	Seq   uint64
	Key   string
	Value []byte
}

// Outbox is a persisted, ordered queue with replace-by-key, for reporters
// that must not lose a message while their destination is down. All methods
// are safe for concurrent use.
type Outbox interface {
	// OutboxPut queues value under key. An entry already queued under the
	// same key is replaced, and the new one goes to the end of the queue.
	OutboxPut(ctx context.Context, key string, value []byte) (seq uint64, err error)
	// OutboxList returns up to limit entries, oldest first (limit <= 0: all).
	OutboxList(ctx context.Context, limit int) ([]OutboxEntry, error)
	// OutboxDelete removes the entry with seq; deleting an entry that was
	// already replaced or removed is not an error.
	OutboxDelete(ctx context.Context, seq uint64) error
}
