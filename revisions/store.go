package revisions

import (
	"context"
	"errors"
	"time"

	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/sources"
)

// ErrNotFound is returned (wrapped) for an unknown node or revision.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned (wrapped) by Store.Commit when the stored record
// is not the one the update was made from: another writer changed it.
var ErrConflict = errors.New("the stored record changed underneath")

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
	// Owner is the source that configures the node (the pipeline's
	// source name, such as "envoyconfig/NAMESPACE/NAME"): the first source
	// to render a node owns it until it stops rendering it or is deleted
	// (Release, Forget). It is stored so that every replica, and a leader
	// after a restart or a failover, honours the same owner instead of
	// whichever source renders first.
	Owner string `json:"owner,omitempty"`
	// Revision counts the record's writes: an Update carries the number
	// the stored record has plus one, and a store refuses it with
	// ErrConflict otherwise (0 for a record never written).
	Revision uint64 `json:"revision,omitempty"`
	// Rollout is the node's progressive rollout: under way, or the last
	// one (nil when its source has no rollout policy). It is stored with
	// the record so that a restarted or new leader continues it at its
	// step and a follower serves the same split.
	Rollout *RolloutRecord `json:"rollout,omitempty"`
}

// RolloutRecord is a rollout's state with the versions its candidate is
// served under.
type RolloutRecord struct {
	Status rollout.Status `json:"status"`
	// Version and Types are the candidate's Publication.Version and
	// per-type versions.
	Version string                 `json:"version,omitempty"`
	Types   map[string]TypeVersion `json:"types,omitempty"`
}

// Active reports whether the rollout is under way.
func (r *RolloutRecord) Active() bool { return r != nil && !r.Status.Phase.Done() }

// NodeData is everything stored for one node ID.
type NodeData struct {
	Record    NodeRecord
	Revisions []*Revision
}

// Update is one atomic change to a node: its new record, the revisions
// whose content is new (written whole, once), the state changes of
// revisions already stored (their content is not written again) and the
// hashes of revisions to delete (pruned from the history).
type Update struct {
	Record NodeRecord
	Put    []*Revision
	States []RevisionState
	Delete []string
}

// RevisionState is the part of a revision that changes after it is made:
// where its content came from last, when it was last published, its taint.
// The rest (node, hash, config, creation time) never changes.
type RevisionState struct {
	Hash        string         `json:"hash"`
	Origin      sources.Origin `json:"origin"`
	PublishedAt time.Time      `json:"publishedAt,omitzero"`
	Taint       *Taint         `json:"taint,omitempty"`
}

// StateOf is the state part of r.
func StateOf(r *Revision) RevisionState {
	return RevisionState{Hash: r.Hash, Origin: r.Origin, PublishedAt: r.PublishedAt, Taint: r.Taint}
}

// WithState is r with its state part replaced by st.
func (r Revision) WithState(st RevisionState) *Revision {
	r.Origin, r.PublishedAt, r.Taint = st.Origin, st.PublishedAt, st.Taint
	return &r
}

// Store persists revisions. It is deliberately small so that a Kubernetes
// home can implement it with custom resources (a revision object per
// revision, the record in the status of a per-node object).
//
// Contract:
//   - A revision's content is written once (Update.Put) and its state
//     apart (Update.States), so a taint or a publication time rewrites
//     only the state: a Kubernetes implementation keeps the content in a
//     revision object's spec and the state in its status.
//   - Commit applies an Update all or nothing, and once it returns nil the
//     change survives a crash of the process. An implementation that cannot
//     write several objects atomically must write Put first, then States,
//     then Record, then Delete, so that a crash at any point leaves every
//     hash in a record's History readable; stray revisions that no history
//     refers to are ignored by the engine and deleted by a later prune.
//   - Commit refuses, with ErrConflict, an Update whose Record.Revision is
//     not the stored record's plus one: another writer changed the node
//     (a second replica that believes it leads).
//   - Load returns every node with its revisions, their state applied.
//     The engine calls it once, before any Commit; a follower may call it
//     again at any time to read what the writer stored (PublicationOf
//     rebuilds what is served from it).
//   - The Engine calls Commit for different nodes concurrently, and for
//     one node one call at a time, each made from the state the previous
//     one left; Load is not called alongside Commit. Implementations must
//     be safe for that and alongside Outbox calls from other goroutines.
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
