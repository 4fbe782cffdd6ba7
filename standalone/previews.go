package standalone

import (
	"context"
	"io/fs"
	"path/filepath"

	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/logging"
	"github.com/legate-dev/legate/pipeline"
	"github.com/legate-dev/legate/preview/prs"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/sources/hooks"
)

// previews are the pull-request previews of the sources that enable them:
// one queue per source, all stopped together.
type previews struct {
	ctx     context.Context
	stop    context.CancelFunc
	sources []*previewedSource
}

// previewedSource is one source's previews.
type previewedSource struct {
	name, url, branch string
	queue             *prs.Queue
}

// buildPreviews sets up the previews of every source that enables them.
// It runs in New, after the core (its dispatcher posts the feedback).
func (s *Server) buildPreviews(reporters map[string]forge.Reporter) {
	ctx, stop := context.WithCancel(context.Background())
	s.previews = &previews{ctx: ctx, stop: stop}
	for _, sc := range s.cfg.Sources {
		if sc.Previews == nil || !sc.Previews.Enabled || sc.Git == nil || s.core.Statuses() == nil {
			continue
		}
		name := sc.Name
		fetcher := prs.GitFetcher{Source: sc.GitConfig(s.cfg.StateDir), Root: filepath.Join(s.cfg.StateDir, "previews")}
		limit := 0
		if c, ok := reporters[name].(forge.Commenter); ok {
			limit = c.CommentLimit()
		}
		pv := &prs.Previewer{
			Source:       name,
			Fetch:        fetcher.Fetch,
			Render:       s.previewRender(name),
			Served:       func() map[string]*render.NodeConfig { return s.served(name) },
			Proxies:      s.connected,
			Post:         s.core.Statuses(),
			CommentLimit: limit,
			Log:          s.log,
		}
		if s.cfg.PublicURL != "" {
			pv.TargetURL = s.cfg.PublicURL + "/api/v1/sources"
		}
		q := prs.NewQueue(ctx, sc.Previews.Concurrency, pv.Run, func(_ string, n int64) {
			if err := fetcher.Remove(n); err != nil {
				s.log.Error(err, "pull request closed; its work area stays", "source", name, "pullRequest", n)
			}
		})
		s.previews.sources = append(s.previews.sources, &previewedSource{name: name, url: sc.Git.URL, branch: sc.Git.GitRef().Branch, queue: q})
	}
}

// shutdown stops every preview and waits for them.
func (p *previews) shutdown() {
	p.stop()
	for _, ps := range p.sources {
		ps.queue.Wait()
	}
}

// previewRender renders a pull request's head as source's commits are
// rendered: the same options (and CUE policies), the same bound, and the
// same secret scope, which checks references by name. The key material
// of a render is read only when the pipeline applies it (Prepare), which
// a preview never does, so no preview reads any, whether from a fork or
// not. It returns once the render's goroutine has, so that the queue's
// slot bounds the renders really running.
func (s *Server) previewRender(source string) func(context.Context, fs.FS) *render.Result {
	return func(ctx context.Context, files fs.FS) *render.Result {
		res, stopped := pipeline.RenderWithin(ctx, files, s.renderOptions(source), s.renderLimit)
		<-stopped
		res.Diagnostics = append(res.Diagnostics, s.secretScope(source, res)...)
		return res
	}
}

// served is what source serves now (core.Served).
func (s *Server) served(source string) map[string]*render.NodeConfig { return s.core.Served(source) }

// connected counts the proxies of node connected now.
func (s *Server) connected(node string) int { return s.core.Connected(node) }

// onPullRequest hands a pull-request event to the queue of every source
// that previews its target branch of its repository.
func (s *Server) onPullRequest(pr hooks.PullRequest) {
	shown := make([]string, 0, len(pr.RepoURLs))
	for _, u := range pr.RepoURLs {
		shown = append(shown, sources.Redact(u))
	}
	n := 0
	for _, ps := range s.previews.sources {
		if ps.branch != pr.BaseBranch || !sameRepository(ps.url, pr.RepoURLs) {
			continue
		}
		n++
		err := ps.queue.Submit(ps.name, prs.Request{Number: pr.Number, HeadSHA: pr.HeadSHA, HeadRef: pr.HeadRef, Fork: pr.Fork, Closed: pr.Closed})
		if err != nil {
			s.log.Error(err, "pull request not previewed", "source", ps.name, "pullRequest", pr.Number)
		}
	}
	if n == 0 {
		logging.Warn(s.log, "pull request targets no previewed source; ignored", "repository", shown, "branch", pr.BaseBranch, "pullRequest", pr.Number)
		return
	}
	s.log.V(1).Info("pull request webhook", "repository", shown, "branch", pr.BaseBranch, "pullRequest", pr.Number, "closed", pr.Closed, "sources", n)
}

func sameRepository(url string, forms []string) bool {
	for _, f := range forms {
		if hooks.SameRepository(url, f) {
			return true
		}
	}
	return false
}
