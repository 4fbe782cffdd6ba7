package forge

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/legate-dev/legate/revisions"
)

// Entry is one undelivered commit status.
type Entry struct {
	// Seq orders entries; the outbox assigns it on put.
	Seq uint64 `json:"seq"`
	// Target names the Reporter the status goes to (see Dispatcher).
	Target string `json:"target"`
	Status Status `json:"status"`
	// Comment, when set, makes the entry a pull-request comment instead
	// of a commit status (Status is then zero).
	Comment *Comment `json:"comment,omitempty"`
}

// statusKeyPrefix starts the outbox key of every commit status, so that
// other users of the same outbox are left alone.
const statusKeyPrefix = "forge-status\x00"

// statusQueue keeps commit statuses in a revisions.Outbox (the revision
// store's persisted queue), so that statuses not yet delivered survive a
// forge outage and a restart. Entries are keyed by target, commit and
// context: a newer status of the same check replaces one still queued
// (only the latest state of a check is worth posting) and takes its place
// at the end of the queue.
type statusQueue struct{ outbox revisions.Outbox }

func statusKey(e Entry) string {
	if c := e.Comment; c != nil {
		// Only the newest body of a comment is worth posting.
		return statusKeyPrefix + e.Target + "\x00#" + strconv.FormatInt(c.Number, 10) + "\x00" + c.Marker
	}
	return statusKeyPrefix + e.Target + "\x00" + e.Status.Commit + "\x00" + e.Status.Context
}

func (q statusQueue) put(ctx context.Context, e Entry) (uint64, error) {
	e.Seq = 0
	v, err := json.Marshal(e)
	if err != nil {
		return 0, fmt.Errorf("encode commit status: %w", err)
	}
	return q.outbox.OutboxPut(ctx, statusKey(e), v)
}

// list returns the queued statuses, oldest first.
func (q statusQueue) list(ctx context.Context) ([]Entry, error) {
	all, err := q.outbox.OutboxList(ctx, 0)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(all))
	for _, item := range all {
		if !strings.HasPrefix(item.Key, statusKeyPrefix) {
			continue
		}
		var e Entry
		if err := json.Unmarshal(item.Value, &e); err != nil {
			return nil, fmt.Errorf("decode queued commit status %d: %w", item.Seq, err)
		}
		e.Seq = item.Seq
		out = append(out, e)
	}
	return out, nil
}

func (q statusQueue) delete(ctx context.Context, seq uint64) error {
	return q.outbox.OutboxDelete(ctx, seq)
}

// MemOutbox is a revisions.Outbox in memory, for tests and for running
// without a store. It replaces by key as the persisted one does.
type MemOutbox struct {
	mu      sync.Mutex
	next    uint64
	entries map[string]revisions.OutboxEntry // by key
}

// NewMemOutbox returns an empty MemOutbox.
func NewMemOutbox() *MemOutbox { return &MemOutbox{entries: map[string]revisions.OutboxEntry{}} }

// OutboxPut implements revisions.Outbox.
func (m *MemOutbox) OutboxPut(_ context.Context, key string, value []byte) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next++
	m.entries[key] = revisions.OutboxEntry{Seq: m.next, Key: key, Value: append([]byte(nil), value...)}
	return m.next, nil
}

// OutboxList implements revisions.Outbox.
func (m *MemOutbox) OutboxList(_ context.Context, limit int) ([]revisions.OutboxEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]revisions.OutboxEntry, 0, len(m.entries))
	for _, e := range m.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// OutboxDelete implements revisions.Outbox.
func (m *MemOutbox) OutboxDelete(_ context.Context, seq uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, e := range m.entries {
		if e.Seq == seq {
			delete(m.entries, k)
		}
	}
	return nil
}

var _ revisions.Outbox = (*MemOutbox)(nil)
