package prs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/preview"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/sources"
)

// StatusContext is the commit status of a preview.
const StatusContext = "legate/preview"

// Marker opens legate's comment of source on a request: one comment per
// source, so two sources following the same branch keep one each.
func Marker(source string) string { return "<!-- legate-preview: " + source + " -->" }

// ForkNote is the comment's note on a request from a fork.
const ForkNote = "This pull request comes from a fork: it was rendered without secrets. Secret references were checked by name only; no key material was read."

// Poster queues commit statuses and comments for delivery
// (*forge.Dispatcher).
type Poster interface {
	Enqueue(ctx context.Context, target string, st forge.Status) error
	EnqueueComment(ctx context.Context, target string, c forge.Comment) error
}

// Previewer does the previews of one source. Its funcs are the home's:
// the same fetch bounds, render options, CUE policies and secret scope as
// the source's commits, and what the source serves now. Run may be called
// concurrently for different requests.
type Previewer struct {
	// Source names the target source; it is also the Poster's target.
	Source string
	// Fetch fetches a request's head into its work area (GitFetcher.Fetch).
	Fetch func(ctx context.Context, req Request) (*sources.Result, error)
	// Render renders files as the source's commits are rendered, bounded
	// in time and memory, with its secret scope applied by name; it must
	// read no key material.
	Render func(ctx context.Context, files fs.FS) *render.Result
	// Served returns the configuration the source serves now, per node.
	Served func() map[string]*render.NodeConfig
	// Proxies counts the proxies connected to a node now; nil: unknown.
	Proxies func(node string) int
	Post    Poster
	// CommentLimit is the forge's comment limit in characters (zero:
	// forge.GitHubCommentLimit).
	CommentLimit int
	// TargetURL, when set, is the status's link.
	TargetURL string
	Log       logr.Logger
}

// Run previews req. When ctx ends first (a newer head or a close
// superseded it, or the home stops), it closes the check it opened on the
// head with an error saying why, and posts no verdict and no comment.
func (p *Previewer) Run(ctx context.Context, _ string, req Request) {
	log := p.Log.WithValues("source", p.Source, "pullRequest", req.Number, "commit", req.HeadSHA)
	p.status(ctx, log, req.HeadSHA, forge.StatePending, "rendering a preview of this commit")
	start := time.Now()
	res, err := p.Fetch(ctx, req)
	if ctx.Err() != nil {
		p.abandoned(ctx, log, req.HeadSHA)
		return
	}
	log.V(1).Info("pull request preview: head fetched", "took", time.Since(start).String())
	if err != nil {
		log.Error(err, "pull request preview: fetch failed")
		p.status(ctx, log, req.HeadSHA, forge.StateFailure, "legate could not fetch this commit: "+err.Error())
		return
	}
	commit := res.Origin.Commit
	if commit == "" {
		commit = req.HeadSHA
	}
	if commit != req.HeadSHA {
		// The head moved between the event and the fetch: the event of
		// the newer head follows; close this one's check.
		p.status(ctx, log, req.HeadSHA, forge.StateError, supersededText(commit))
		p.status(ctx, log, commit, forge.StatePending, "rendering a preview of this commit")
	}
	start = time.Now()
	result := p.Render(ctx, res.Files)
	if ctx.Err() != nil {
		p.abandoned(ctx, log, commit)
		return
	}
	log.V(1).Info("pull request preview: head rendered", "took", time.Since(start).String())
	var notes []string
	if req.Fork {
		notes = append(notes, ForkNote)
	}
	var served map[string]*render.NodeConfig
	if p.Served != nil {
		served = p.Served()
	}
	report := preview.Compare(preview.Fleet{Nodes: served}, preview.FleetOf(result), preview.Options{
		BaseLabel: "served by " + p.Source,
		HeadLabel: fmt.Sprintf("#%d at %s", req.Number, revisions.Short(commit)),
		Proxies:   p.Proxies,
		Notes:     notes,
	})
	state, desc := verdict(report)
	log.Info("pull request previewed", "headCommit", commit, "state", string(state), "changed", report.Summary.Changed+report.Summary.Added+report.Summary.Removed)
	p.status(ctx, log, commit, state, desc)
	p.comment(ctx, log, req.Number, commit, report)
}

// supersededText is the description of a head's check closed because
// newer, a later head of the same request, is previewed instead.
func supersededText(newer string) string {
	return "superseded by " + revisions.Short(newer) + ": not previewed, the newer head is"
}

// abandoned closes the check a cancelled preview opened on commit. Left
// pending, it would stay so for ever: nothing previews that head again.
// The state is error, not failure: the commit was not judged.
func (p *Previewer) abandoned(ctx context.Context, log logr.Logger, commit string) {
	var desc string
	var newer *Superseded
	switch cause := context.Cause(ctx); {
	case errors.As(cause, &newer):
		if newer.By == commit {
			return // the head moved to this commit while fetching: its own run follows
		}
		desc = supersededText(newer.By)
	case errors.Is(cause, ErrClosed):
		desc = "not previewed: the pull request was closed"
	default:
		desc = "not previewed: legate stopped before the preview finished; push again to preview"
	}
	// ctx is over; the status goes to the persisted outbox, which a
	// cancelled context must not stop.
	p.status(context.WithoutCancel(ctx), log, commit, forge.StateError, desc)
}

// verdict is the commit status of a report: failure with the first
// diagnostics (file:line: message) when the head does not render, else
// success saying which nodes would change.
func verdict(r *preview.Report) (forge.State, string) {
	if r.Invalid {
		var b strings.Builder
		b.WriteString("would be refused: ")
		for i, d := range r.Diagnostics {
			if i == 2 {
				break
			}
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(d.String())
		}
		if more := len(r.Diagnostics) + r.DiagnosticsOmitted - 2; more > 0 {
			fmt.Fprintf(&b, " (and %d more)", more)
		}
		return forge.StateFailure, b.String()
	}
	s := r.Summary
	n := s.Added + s.Removed + s.Changed
	if n == 0 {
		return forge.StateSuccess, "valid; no node's configuration would change"
	}
	names := make([]string, 0, 3)
	for i, c := range r.Nodes {
		if i == 3 {
			break
		}
		names = append(names, c.Node)
	}
	desc := fmt.Sprintf("valid; would change %d node(s): %s", n, strings.Join(names, ", "))
	if n > len(names) {
		desc += ", …"
	}
	return forge.StateSuccess, desc
}

func (p *Previewer) status(ctx context.Context, log logr.Logger, commit string, state forge.State, desc string) {
	err := p.Post.Enqueue(ctx, p.Source, forge.Status{
		Commit: commit, State: state, Context: StatusContext, Description: desc, TargetURL: p.TargetURL,
	})
	if err != nil {
		log.Error(err, "could not queue the preview's commit status")
	}
}

// footer closes every comment: what was compared, and that nothing moved.
const footer = "\n\n<sub>legate rendered %s with the options, policies and secret scope of source `%s` and compared it with what that source serves now. Nothing was stored or published. This comment is edited on every push.</sub>\n"

func (p *Previewer) comment(ctx context.Context, log logr.Logger, number int64, commit string, r *preview.Report) {
	limit := p.CommentLimit
	if limit <= 0 {
		limit = forge.GitHubCommentLimit
	}
	marker := Marker(p.Source)
	foot := fmt.Sprintf(footer, commit, p.Source)
	// Markdown's limit is in bytes, the forges' in characters: bytes are
	// never fewer, so the body fits.
	body := marker + "\n" + r.Markdown(limit-len(marker)-len(foot)-1) + foot
	if err := p.Post.EnqueueComment(ctx, p.Source, forge.Comment{Number: number, Marker: marker, Body: body}); err != nil {
		log.Error(err, "could not queue the preview's comment")
	}
}
