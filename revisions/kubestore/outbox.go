package kubestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/legate-dev/legate/revisions"
)

// The outbox (undelivered commit statuses) is one ConfigMap, written with
// its resourceVersion so that two writers never lose each other's entry.
const (
	OutboxName = "legate-outbox"
	outboxKey  = "outbox"
	// MaxOutboxEntries bounds the queue (each entry is a commit status of
	// about a kilobyte; a ConfigMap holds at most 1 MiB). A forge that is
	// down long enough to fill it gets newer statuses refused with an
	// error, never silently dropped.
	MaxOutboxEntries = 500
	// outboxAttempts bounds the retries of a write that met another; each
	// waits a random time up to outboxBackoff × the attempt number, so
	// that racing writers fall out of step.
	outboxAttempts = 32
	outboxBackoff  = 5 * time.Millisecond
)

var _ revisions.Outbox = Store{}

type outboxState struct {
	Next    uint64        `json:"next"`
	Entries []outboxEntry `json:"entries"`
}

type outboxEntry struct {
	Seq   uint64 `json:"seq"`
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// OutboxPut implements revisions.Outbox.
func (s Store) OutboxPut(ctx context.Context, key string, value []byte) (uint64, error) {
	var seq uint64
	err := s.modifyOutbox(ctx, func(st *outboxState) error {
		st.Entries = slices.DeleteFunc(st.Entries, func(e outboxEntry) bool { return e.Key == key })
		if len(st.Entries) >= MaxOutboxEntries {
			return fmt.Errorf("the outbox holds %d undelivered entries, its limit: is the forge reachable?", len(st.Entries))
		}
		st.Next++
		seq = st.Next
		st.Entries = append(st.Entries, outboxEntry{Seq: seq, Key: key, Value: value})
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("queue outbox entry %q: %w", key, err)
	}
	return seq, nil
}

// OutboxList implements revisions.Outbox.
func (s Store) OutboxList(ctx context.Context, limit int) ([]revisions.OutboxEntry, error) {
	_, st, err := s.readOutbox(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]revisions.OutboxEntry, 0, len(st.Entries))
	for _, e := range st.Entries {
		if limit > 0 && len(out) == limit {
			break
		}
		out = append(out, revisions.OutboxEntry{Seq: e.Seq, Key: e.Key, Value: e.Value})
	}
	return out, nil
}

// OutboxDelete implements revisions.Outbox.
func (s Store) OutboxDelete(ctx context.Context, seq uint64) error {
	return s.modifyOutbox(ctx, func(st *outboxState) error {
		st.Entries = slices.DeleteFunc(st.Entries, func(e outboxEntry) bool { return e.Seq == seq })
		return nil
	})
}

// readOutbox returns the outbox ConfigMap (nil when there is none yet)
// and its state.
func (s Store) readOutbox(ctx context.Context) (*corev1.ConfigMap, outboxState, error) {
	var cm corev1.ConfigMap
	err := s.Client.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: OutboxName}, &cm)
	switch {
	case apierrors.IsNotFound(err):
		return nil, outboxState{}, nil
	case err != nil:
		return nil, outboxState{}, fmt.Errorf("read the outbox ConfigMap %s/%s: %w", s.Namespace, OutboxName, err)
	}
	var st outboxState
	if raw := cm.Data[outboxKey]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			return nil, outboxState{}, fmt.Errorf("decode the outbox ConfigMap %s/%s: %w", s.Namespace, OutboxName, err)
		}
	}
	return &cm, st, nil
}

// modifyOutbox applies change to the stored state, again on a fresh read
// when another writer got there first.
func (s Store) modifyOutbox(ctx context.Context, change func(*outboxState) error) error {
	for attempt := range outboxAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(rand.N(outboxBackoff * time.Duration(attempt))):
			}
		}
		cm, st, err := s.readOutbox(ctx)
		if err != nil {
			return err
		}
		if err := change(&st); err != nil {
			return err
		}
		raw, err := json.Marshal(st)
		if err != nil {
			return err
		}
		if cm == nil {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name: OutboxName, Namespace: s.Namespace,
				Labels: map[string]string{LabelComponent: "outbox", LabelManagedBy: "legate"},
			}}
			cm.Data = map[string]string{outboxKey: string(raw)}
			err = s.Client.Create(ctx, cm)
		} else {
			cm.Data = map[string]string{outboxKey: string(raw)}
			err = s.Client.Update(ctx, cm)
		}
		switch {
		case err == nil:
			return nil
		case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
			continue
		default:
			return fmt.Errorf("write the outbox ConfigMap %s/%s: %w", s.Namespace, OutboxName, err)
		}
	}
	return errors.New("the outbox ConfigMap kept changing under this write: try again")
}
