package standalone

import (
	"context"
	"sync"
	"time"

	"github.com/legate-dev/legate/sources"
)

// SourceStatus is what the status API shows of one source.
type SourceStatus struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	URL  string `json:"url"`
	// Revision is the last fetched revision in Flux's form
	// ("main@sha1:<sha>").
	Revision string `json:"revision,omitempty"`
	Commit   string `json:"commit,omitempty"`
	// AppliedRevision is the last revision whose configuration was applied
	// (Flux's lastAppliedRevision); it trails Revision while the newest
	// commit is invalid.
	AppliedRevision string `json:"appliedRevision,omitempty"`
	// Nodes are the node IDs the source's last good render produced.
	Nodes       []string   `json:"nodes,omitempty"`
	LastFetch   *time.Time `json:"lastFetch,omitempty"`
	LastApplied *time.Time `json:"lastApplied,omitempty"`
	// LastError is the last fetch, render or apply failure; empty when the
	// last attempt succeeded.
	LastError string `json:"lastError,omitempty"`
	// Diagnostics are the renderer's errors of the last rejected render,
	// or the warnings of the last accepted one.
	Diagnostics []string `json:"diagnostics,omitempty"`
	// Rejection says when the proxies rejected (tainted) the revision the
	// newest commit made, on which nodes and why: Revision is then
	// applied, yet not served.
	Rejection string `json:"rejection,omitempty"`
	// LastAttempt is when the last finished fetch → render → apply pass
	// started: a fetch requested at T is done once LastAttempt is after T.
	LastAttempt *time.Time `json:"lastAttempt,omitempty"`
	// Suspended sources are not fetched until resumed (legate suspend).
	Suspended bool `json:"suspended,omitempty"`
}

// sourceLoop fetches one source on its interval and on triggers and hands
// what it fetched to the pipeline. One goroutine runs it.
type sourceLoop struct {
	s    *Server
	cfg  SourceConfig
	src  sources.Source
	kick chan struct{}

	mu sync.Mutex
	// status holds what the loop itself knows (name, kind, URL, fetch
	// times, suspension); snapshot adds the pipeline's part.
	status SourceStatus
	tried  bool
	// fetchErr is the last fetch's error; "" when it succeeded.
	fetchErr string
}

func newSourceLoop(s *Server, cfg SourceConfig, src sources.Source) *sourceLoop {
	l := &sourceLoop{s: s, cfg: cfg, src: src, kick: make(chan struct{}, 1)}
	l.status = SourceStatus{Name: cfg.Name, Kind: string(sources.KindGit)}
	if cfg.Git != nil {
		l.status.URL = sources.Redact(cfg.Git.URL)
	}
	return l
}

func (l *sourceLoop) trigger() {
	select {
	case l.kick <- struct{}{}:
	default: // a fetch is already pending
	}
}

// snapshot is the source's status: the loop's own part and the pipeline's.
func (l *sourceLoop) snapshot() SourceStatus {
	l.mu.Lock()
	st, fetchErr := l.status, l.fetchErr
	l.mu.Unlock()
	ps := l.s.pipeline.Status(l.cfg.Name)
	st.Revision, st.Commit, st.AppliedRevision = ps.Revision, ps.Commit, ps.AppliedRevision
	st.Nodes = ps.Nodes
	if !ps.LastApplied.IsZero() {
		st.LastApplied = &ps.LastApplied
	}
	st.LastError = ps.Summary()
	if fetchErr != "" {
		st.LastError = fetchErr
	}
	shown := ps.Warnings // an accepted commit shows only its warnings
	if ps.Invalid {
		shown = ps.Diagnostics
	}
	st.Diagnostics = nil
	for _, d := range shown {
		st.Diagnostics = append(st.Diagnostics, d.String())
	}
	return st
}

func (l *sourceLoop) run(ctx context.Context) {
	ticker := time.NewTicker(l.cfg.Interval.Duration)
	defer ticker.Stop()
	for {
		if l.isSuspended() {
			l.mu.Lock()
			l.tried = true // suspended is an answer: readiness does not wait for it
			l.mu.Unlock()
		} else {
			l.sync(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-l.kick:
		}
	}
}

// sync is one fetch, handed to the pipeline.
func (l *sourceLoop) sync(ctx context.Context) {
	start := time.Now()
	defer func() {
		l.mu.Lock()
		l.tried = true
		l.status.LastAttempt = &start
		l.mu.Unlock()
	}()

	res, err := l.src.Fetch(ctx)
	l.s.metrics.fetchDuration.WithLabelValues(l.cfg.Name).Observe(time.Since(start).Seconds())
	now := time.Now()
	l.mu.Lock()
	l.status.LastFetch = &now
	l.fetchErr = ""
	if err != nil && ctx.Err() == nil {
		l.fetchErr = err.Error()
	}
	l.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			l.s.metrics.fetchErrors.WithLabelValues(l.cfg.Name).Inc()
			l.s.log.Error(err, "fetch failed", "source", l.cfg.Name)
		}
		return
	}
	l.s.pipeline.Sync(ctx, l.cfg.Name, res)
}
