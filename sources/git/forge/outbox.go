package forge

import (
	"context"
	"sort"
	"sync"
)

// Entry is one undelivered commit status.
type Entry struct {
	// Seq orders entries; the Outbox assigns it on Put.
	Seq uint64 `json:"seq"`
	// Target names the Reporter the status goes to (see Dispatcher).
	Target string `json:"target"`
	Status Status `json:"status"`
}

// Outbox persists undelivered statuses so that none is lost while a forge
// is down or legate restarts. The revisions store implements it; MemOutbox
// is the in-memory implementation. Implementations are safe for concurrent
// use.
type Outbox interface {
	// Put stores e and returns the Seq it assigned, greater than the Seq of
	// every entry stored before.
	Put(ctx context.Context, e Entry) (uint64, error)
	// List returns every stored entry in Seq order.
	List(ctx context.Context) ([]Entry, error)
	// Delete removes the entry with seq; deleting a missing entry is not an
	// error.
	Delete(ctx context.Context, seq uint64) error
}

// MemOutbox is an Outbox in memory, for tests and for running without a
// store.
type MemOutbox struct {
	mu      sync.Mutex
	next    uint64
	entries map[uint64]Entry
}

// NewMemOutbox returns an empty MemOutbox.
func NewMemOutbox() *MemOutbox { return &MemOutbox{entries: map[uint64]Entry{}} }

// Put implements Outbox.
func (m *MemOutbox) Put(_ context.Context, e Entry) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next++
	e.Seq = m.next
	m.entries[e.Seq] = e
	return e.Seq, nil
}

// List implements Outbox.
func (m *MemOutbox) List(context.Context) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Entry, 0, len(m.entries))
	for _, e := range m.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

// Delete implements Outbox.
func (m *MemOutbox) Delete(_ context.Context, seq uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.entries, seq)
	return nil
}
