package standalone

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/legate-dev/legate/logging"
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

// sourceLoop fetches one source on its interval and on triggers, renders
// what changed and applies it to the engine. One goroutine runs it.
type sourceLoop struct {
	s    *Server
	cfg  SourceConfig
	src  sources.Source
	kick chan struct{}

	mu          sync.Mutex
	status      SourceStatus
	tried       bool
	lastContent string // content of the last fetch that was rendered
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

// rerender makes the next sync render the source's content even if it did
// not change, and starts that sync.
func (l *sourceLoop) rerender() {
	l.mu.Lock()
	l.lastContent = ""
	l.mu.Unlock()
	l.trigger()
}

func (l *sourceLoop) snapshot() SourceStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.status
	st.Nodes = slices.Clone(st.Nodes)
	st.Diagnostics = slices.Clone(st.Diagnostics)
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

// maxStatusDiagnostics bounds the renderer messages kept in the status.
const maxStatusDiagnostics = 20

// sync is one fetch → render → apply pass.
func (l *sourceLoop) sync(ctx context.Context) {
	log := l.s.log.WithValues("source", l.cfg.Name)
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
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		l.s.metrics.fetchErrors.WithLabelValues(l.cfg.Name).Inc()
		log.Error(err, "fetch failed")
		l.setError(now, err.Error(), nil)
		return
	}
	origin := res.Origin
	l.mu.Lock()
	l.status.Revision = origin.Revision()
	l.status.Commit = origin.Commit
	l.status.LastFetch = &now
	unchanged := !res.Changed && l.lastContent == res.Content
	l.mu.Unlock()
	if unchanged {
		l.recommit(ctx, origin, now)
		return
	}
	log = log.WithValues("revision", origin.Revision())

	start = time.Now()
	ropts := l.s.render()
	ropts.DefaultNode = l.s.cfg.DefaultNode
	if l.s.cfg.MaxFileSize > 0 {
		ropts.MaxFileSize = l.s.cfg.MaxFileSize
	}
	result := renderBounded(res.Files, ropts, l.s.renderLimit)
	result.Diagnostics = append(result.Diagnostics, secretScope{source: l.cfg.Name, grants: l.cfg.Secrets}.apply(result)...)
	l.s.metrics.renderDuration.WithLabelValues(l.cfg.Name).Observe(time.Since(start).Seconds())
	l.mu.Lock()
	l.lastContent = res.Content
	l.mu.Unlock()
	l.s.remember(l.cfg.Name, origin.Commit, result)
	if !result.OK() {
		l.s.metrics.renderFailures.WithLabelValues(l.cfg.Name).Inc()
		msgs := make([]string, 0, min(len(result.Diagnostics), maxStatusDiagnostics))
		for i, d := range result.Diagnostics {
			if i < maxStatusDiagnostics {
				msgs = append(msgs, d.String())
			}
		}
		logging.Warn(log, "commit rejected by validation; nothing published", "commit", origin.Commit, "errors", len(result.Diagnostics), "first", msgs[0])
		l.s.engine.RecordValidationFailure(origin, result.Diagnostics)
		l.setError(now, fmt.Sprintf("validation failed with %d error(s): %s", len(result.Diagnostics), msgs[0]), msgs)
		return
	}

	warnings := make([]string, 0, min(len(result.Warnings), maxStatusDiagnostics))
	for _, d := range result.Warnings[:min(len(result.Warnings), maxStatusDiagnostics)] {
		warnings = append(warnings, d.String())
		log.Info("configuration accepted with a warning", "commit", origin.Commit, "warning", d.String())
	}

	nodes := make([]string, 0, len(result.Nodes))
	for id := range result.Nodes {
		nodes = append(nodes, id)
	}
	slices.Sort(nodes)
	var problems []string
	applied := make([]string, 0, len(nodes))
	var rejected []string // nodes whose content was tainted before this apply
	l.s.release(l.cfg.Name)
	for _, node := range nodes {
		if owner, ok := l.s.claim(node, l.cfg.Name); !ok {
			msg := fmt.Sprintf("node %q is already rendered by source %q; a node ID may come from one source only", node, owner)
			logging.Warn(log, "node is rendered by another source; this source's configuration of it is ignored", "node", node, "owner", owner)
			problems = append(problems, msg)
			l.s.contest(node, owner, l.cfg.Name)
			continue
		}
		if l.s.taintedContent(node, result.Nodes[node].Hash) {
			rejected = append(rejected, node)
		}
		if err := l.s.engine.Apply(ctx, node, result.Nodes[node], origin); err != nil {
			log.Error(err, "apply failed", "node", node)
			problems = append(problems, fmt.Sprintf("node %q: %v", node, err))
			continue
		}
		applied = append(applied, node)
	}
	for _, c := range l.s.disown(l.cfg.Name, nodes) {
		if cl := l.s.loop(c); cl != nil {
			log.Info("a node this source no longer renders is released to the source that also renders it", "to", c)
			cl.rerender()
		}
	}
	logApplied(log, origin.Commit, applied, rejected)
	lastError := strings.Join(append(problems, l.s.contestsOf(l.cfg.Name)...), "; ")
	l.mu.Lock() // never held while taking the server's lock
	defer l.mu.Unlock()
	l.status.Nodes = applied
	l.status.LastApplied = &now
	l.status.AppliedRevision = origin.Revision()
	l.status.Diagnostics = warnings // an accepted commit shows only its warnings
	l.status.LastError = lastError
}

func (l *sourceLoop) setError(now time.Time, msg string, diags []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.status.LastFetch = &now
	l.status.LastError = msg
	l.status.Diagnostics = diags
}

// logApplied tells what an apply of commit did, truthfully: content the
// node's proxies rejected before (rejected, checked before the apply, as a
// proxy may reject new content while it is applied) stays tainted and is
// not served, which is no "configuration applied".
func logApplied(log logr.Logger, commit string, applied, rejected []string) {
	var served, tainted []string
	for _, node := range applied {
		if slices.Contains(rejected, node) {
			tainted = append(tainted, node)
		} else {
			served = append(served, node)
		}
	}
	if len(tainted) > 0 {
		logging.Warn(log, "commit carries content the proxies rejected before; it stays tainted and is not served (legate untaint clears it)",
			"commit", commit, "nodes", tainted)
	}
	if len(served) > 0 {
		log.Info("configuration applied", "commit", commit, "nodes", served)
	} else if len(tainted) == 0 {
		logging.Warn(log, "commit applied to no node", "commit", commit)
	}
}

// taintedContent reports whether node's revision of hash is tainted.
func (s *Server) taintedContent(node, hash string) bool {
	st, ok := s.engine.Node(node)
	if !ok {
		return false
	}
	for _, r := range st.History {
		if r.Hash == hash {
			return r.Tainted
		}
	}
	return false
}
