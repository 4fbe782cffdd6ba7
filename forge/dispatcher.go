package forge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/legate-dev/legate/revisions"
)

// Backoff bounds of delivery retries: the first retry waits MinBackoff, each
// further one twice as long, up to MaxBackoff unless DispatcherOptions set a
// lower cap.
const (
	MinBackoff = time.Second
	MaxBackoff = 5 * time.Minute
	// dedupeCap bounds the memory of last-known statuses.
	dedupeCap = 10000
)

// DispatcherOptions configure a Dispatcher.
type DispatcherOptions struct {
	// Clock tells the time of retries and waits for the next one; nil
	// means the wall clock. Tests pass k8s.io/utils/clock/testing's fake.
	Clock clock.Clock
	// Logger defaults to discarding.
	Logger *slog.Logger
	// MaxBackoff caps the wait between two attempts for one target
	// (default and upper bound MaxBackoff). A low cap makes statuses arrive
	// within that time of a forge coming back from an outage.
	MaxBackoff time.Duration
	// Lookup finds the Reporter of a target not in the static map (a home
	// whose sources come and go, such as the Kubernetes controller). It
	// returns an error wrapping ErrUnknownTarget for a target that is gone
	// for good (its statuses are dropped); any other error keeps them
	// queued and retries with backoff (the target is not known yet, e.g.
	// right after a restart).
	Lookup func(target string) (Reporter, error)
}

// ErrUnknownTarget says that a target has no reporter and never will.
var ErrUnknownTarget = errors.New("no commit status reporter for this target")

// Dispatcher delivers commit statuses through an Outbox to Reporters keyed
// by target name. Statuses of one target are delivered in the order they
// were enqueued; a target whose forge fails is retried with backoff while
// the others go on. Enqueue and Flush may be called from any goroutine; Run
// runs once.
type Dispatcher struct {
	outbox    statusQueue
	reporters map[string]Reporter
	lookup    func(string) (Reporter, error)
	clock     clock.Clock
	maxWait   time.Duration
	log       *slog.Logger
	wake      chan struct{}

	mu     sync.Mutex
	latest map[dedupeKey]Status // last enqueued status per key
	loaded bool
	retry  map[string]retryState
}

type dedupeKey struct{ target, commit, context string }

type retryState struct {
	failures int
	next     time.Time
}

// NewDispatcher returns a Dispatcher; reporters maps target names (e.g. the
// source name) to their Reporter.
func NewDispatcher(outbox revisions.Outbox, reporters map[string]Reporter, opts DispatcherOptions) *Dispatcher {
	d := &Dispatcher{
		outbox:    statusQueue{outbox},
		reporters: reporters,
		lookup:    opts.Lookup,
		clock:     opts.Clock,
		log:       opts.Logger,
		maxWait:   opts.MaxBackoff,
		wake:      make(chan struct{}, 1),
		latest:    map[dedupeKey]Status{},
		retry:     map[string]retryState{},
	}
	if d.clock == nil {
		d.clock = clock.RealClock{}
	}
	if d.maxWait <= 0 || d.maxWait > MaxBackoff {
		d.maxWait = MaxBackoff
	}
	if d.log == nil {
		d.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return d
}

// Enqueue stores st for delivery to target, unless it equals the last
// status enqueued for the same target, commit and context. The description
// is scrubbed of secrets before it is stored.
func (d *Dispatcher) Enqueue(ctx context.Context, target string, st Status) error {
	if _, err := d.reporter(target); errors.Is(err, ErrUnknownTarget) {
		return fmt.Errorf("target %q: %w", target, err)
	}
	st, err := prepare(st, 1024)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.loadLocked(ctx); err != nil {
		return err
	}
	key := dedupeKey{target, st.Commit, st.Context}
	if prev, ok := d.latest[key]; ok && prev == st {
		return nil
	}
	if _, err := d.outbox.put(ctx, Entry{Target: target, Status: st}); err != nil {
		return fmt.Errorf("store commit status for %s: %w", st.Commit, err)
	}
	if len(d.latest) >= dedupeCap {
		d.latest = map[dedupeKey]Status{}
	}
	d.latest[key] = st
	select {
	case d.wake <- struct{}{}:
	default:
	}
	return nil
}

// loadLocked seeds the dedupe memory from entries left in the outbox by an
// earlier run.
func (d *Dispatcher) loadLocked(ctx context.Context) error {
	if d.loaded {
		return nil
	}
	entries, err := d.outbox.list(ctx)
	if err != nil {
		return fmt.Errorf("read commit status outbox: %w", err)
	}
	for _, e := range entries {
		if e.Comment != nil {
			continue
		}
		d.latest[dedupeKey{e.Target, e.Status.Commit, e.Status.Context}] = e.Status
	}
	d.loaded = true
	return nil
}

// Flush attempts every due entry once, in order, and returns when the next
// retry is due (the zero time when nothing waits for a retry).
func (d *Dispatcher) Flush(ctx context.Context) (time.Time, error) {
	entries, err := d.outbox.list(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("read commit status outbox: %w", err)
	}
	now := d.clock.Now()
	blocked := map[string]bool{}
	for _, e := range entries {
		if ctx.Err() != nil {
			return time.Time{}, ctx.Err()
		}
		if blocked[e.Target] || d.waiting(e.Target, now) {
			blocked[e.Target] = true
			continue
		}
		rep, err := d.reporter(e.Target)
		if errors.Is(err, ErrUnknownTarget) {
			d.log.Error("dropping commit status for an unknown target", "target", e.Target, "commit", e.Status.Commit)
			_ = d.outbox.delete(ctx, e.Seq)
			continue
		}
		if err == nil {
			err = deliver(ctx, rep, e)
		}
		switch {
		case err == nil:
			d.succeeded(e.Target)
		case IsPermanent(err):
			d.log.Error("dropping commit status the forge rejected", "target", e.Target, "commit", e.Status.Commit, "context", e.Status.Context, "error", err.Error())
			d.succeeded(e.Target)
		default:
			wait := d.failed(e.Target, now)
			d.log.Info("commit status delivery failed, will retry", "target", e.Target, "commit", e.Status.Commit, "retryIn", wait, "error", err.Error())
			blocked[e.Target] = true
			continue
		}
		if err := d.outbox.delete(ctx, e.Seq); err != nil {
			return time.Time{}, fmt.Errorf("remove delivered commit status %d: %w", e.Seq, err)
		}
	}
	return d.nextRetry(), nil
}

// EnqueueComment stores c for delivery to target's pull request, replacing
// a body of the same comment still queued. Target's Reporter must be a
// Commenter.
func (d *Dispatcher) EnqueueComment(ctx context.Context, target string, c Comment) error {
	rep, err := d.reporter(target)
	if errors.Is(err, ErrUnknownTarget) {
		return fmt.Errorf("target %q: %w", target, err)
	}
	limit := GitLabCommentLimit
	if cm, ok := rep.(Commenter); ok {
		limit = cm.CommentLimit()
	} else if err == nil {
		return fmt.Errorf("target %q: its forge client cannot comment on pull requests", target)
	}
	if c, err = prepareComment(c, limit); err != nil {
		return err
	}
	if _, err := d.outbox.put(ctx, Entry{Target: target, Comment: &c}); err != nil {
		return fmt.Errorf("store comment on pull request %d: %w", c.Number, err)
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
	return nil
}

// deliver posts one entry: a comment or a commit status.
func deliver(ctx context.Context, rep Reporter, e Entry) error {
	if e.Comment == nil {
		return rep.Post(ctx, e.Status)
	}
	cm, ok := rep.(Commenter)
	if !ok {
		return &PermanentError{fmt.Errorf("target %q cannot comment on pull requests", e.Target)}
	}
	return cm.UpsertComment(ctx, *e.Comment)
}

// reporter is target's Reporter: from the static map, else from Lookup.
func (d *Dispatcher) reporter(target string) (Reporter, error) {
	if rep, ok := d.reporters[target]; ok {
		return rep, nil
	}
	if d.lookup == nil {
		return nil, ErrUnknownTarget
	}
	return d.lookup(target)
}

func (d *Dispatcher) waiting(target string, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.retry[target]
	return ok && now.Before(r.next)
}

func (d *Dispatcher) succeeded(target string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.retry, target)
}

func (d *Dispatcher) failed(target string, now time.Time) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.retry[target]
	wait := backoff(r.failures, d.maxWait)
	r.failures++
	r.next = now.Add(wait)
	d.retry[target] = r
	return wait
}

func (d *Dispatcher) nextRetry() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	var next time.Time
	for _, r := range d.retry {
		if next.IsZero() || r.next.Before(next) {
			next = r.next
		}
	}
	return next
}

// backoff is the wait after the given number of earlier failures, at most
// limit.
func backoff(failures int, limit time.Duration) time.Duration {
	wait := MinBackoff
	for i := 0; i < failures && wait < limit; i++ {
		wait *= 2
	}
	return min(wait, limit)
}

// Run delivers until ctx ends: at start, whenever a status is enqueued and
// when a retry is due.
func (d *Dispatcher) Run(ctx context.Context) error {
	for {
		next, err := d.Flush(ctx)
		if err != nil && ctx.Err() == nil {
			d.log.Error("flushing commit statuses failed", "error", err.Error())
			next = d.clock.Now().Add(MinBackoff)
		}
		var timer <-chan time.Time
		if !next.IsZero() {
			timer = d.clock.After(max(next.Sub(d.clock.Now()), 0))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-d.wake:
		case <-timer:
		}
	}
}
