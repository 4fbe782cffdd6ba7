package standalone

import (
	"context"
	"sync"
	"time"

	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/statuspage"
)

// sourceLoop fetches one source on its interval and on triggers and hands
// what it fetched to the pipeline. One goroutine runs it.
type sourceLoop struct {
	s    *Server
	cfg  serveconfig.SourceConfig
	src  sources.Source
	kick chan struct{}

	mu sync.Mutex
	// status holds what the loop itself knows (name, kind, URL, fetch
	// times, suspension); snapshot adds the pipeline's part.
	status statuspage.Source
	tried  bool
	// fetchErr is the last fetch's error; "" when it succeeded.
	fetchErr string
}

func newSourceLoop(s *Server, cfg serveconfig.SourceConfig, src sources.Source) *sourceLoop {
	l := &sourceLoop{s: s, cfg: cfg, src: src, kick: make(chan struct{}, 1)}
	l.status = statuspage.Source{Name: cfg.Name, Kind: string(sources.KindGit)}
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
func (l *sourceLoop) snapshot() statuspage.Source {
	l.mu.Lock()
	st, fetchErr := l.status, l.fetchErr
	l.mu.Unlock()
	ps := statuspage.SourceOf(l.s.pipeline.Status(l.cfg.Name))
	st.Revision, st.Commit, st.AppliedRevision = ps.Revision, ps.Commit, ps.AppliedRevision
	st.Nodes, st.LastApplied, st.LastError, st.Diagnostics, st.Invalid = ps.Nodes, ps.LastApplied, ps.LastError, ps.Diagnostics, ps.Invalid
	if fetchErr != "" {
		st.LastError = fetchErr
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
