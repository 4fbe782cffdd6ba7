package standalone

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/sources/git/forge"
)

// statusOutbox stores the commit statuses of a forge.Dispatcher in the
// revisions store's persisted outbox, so that statuses not yet delivered
// survive a forge outage and a restart.
//
// Entries are keyed by target, commit and context: a newer status of the
// same check replaces one still queued (only the latest state of a check is
// worth posting), and takes its place at the end of the queue. Entries of
// other reporters sharing the outbox are left alone.
type statusOutbox struct {
	store revisions.Outbox
}

const statusKeyPrefix = "forge-status\x00"

func statusKey(e forge.Entry) string {
	return statusKeyPrefix + e.Target + "\x00" + e.Status.Commit + "\x00" + e.Status.Context
}

// Put implements forge.Outbox.
func (o statusOutbox) Put(ctx context.Context, e forge.Entry) (uint64, error) {
	e.Seq = 0
	v, err := json.Marshal(e)
	if err != nil {
		return 0, fmt.Errorf("encode commit status: %w", err)
	}
	return o.store.OutboxPut(ctx, statusKey(e), v)
}

// List implements forge.Outbox.
func (o statusOutbox) List(ctx context.Context) ([]forge.Entry, error) {
	all, err := o.store.OutboxList(ctx, 0)
	if err != nil {
		return nil, err
	}
	out := make([]forge.Entry, 0, len(all))
	for _, item := range all {
		if !strings.HasPrefix(item.Key, statusKeyPrefix) {
			continue
		}
		var e forge.Entry
		if err := json.Unmarshal(item.Value, &e); err != nil {
			return nil, fmt.Errorf("decode queued commit status %d: %w", item.Seq, err)
		}
		e.Seq = item.Seq
		out = append(out, e)
	}
	return out, nil
}

// Delete implements forge.Outbox.
func (o statusOutbox) Delete(ctx context.Context, seq uint64) error {
	return o.store.OutboxDelete(ctx, seq)
}

var _ forge.Outbox = statusOutbox{}
