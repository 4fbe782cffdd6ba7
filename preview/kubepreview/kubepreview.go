// Package kubepreview previews the pull requests of the Kubernetes home's
// EnvoySources of kind git with a forge (spec.commitStatus) and
// spec.previews.enabled. The home has no inbound forge webhook, so the
// requests are found by polling: at every reconcile of the EnvoySource
// (its interval) the forge's open requests into the source's branch are
// listed, a request whose head changed is handed to the same queue and
// previewer as legate serve's (preview/prs), and a request no longer open
// has its work area removed.
//
// Tenancy: a preview renders with exactly the source's options, policies
// and secret scope (Home.Render, Home.Scope: Secrets of its namespace,
// checked by name; no key material is read by any preview, from a fork or
// not), and a node another source owns is refused with the message the
// commit path gives (pipeline.Conflict), revealing nothing of its owner's
// content or proxies.
package kubepreview

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/pipeline"
	"github.com/legate-dev/legate/preview/prs"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/sources/envoysource"
)

// listTimeout bounds one listing of a forge's open requests (the forge
// client has its own timeout per request; a listing reads two pages).
const listTimeout = 30 * time.Second

// DefaultRenders bounds the previews rendering at once in the whole
// controller, whatever the sources' concurrency: the previews of many
// namespaces share the CPU the served commits need.
const DefaultRenders = 4

// Home is what the previews need of the Kubernetes home.
type Home struct {
	// Reader reads the git credentials Secret of an EnvoySource (its own
	// namespace only).
	Reader client.Reader
	// Env is the source drivers' (the fetch bounds, the budget, the guard).
	Env envoysource.Env
	// Root holds the work areas, Root/<source>/<number>.
	Root string
	// Options are the render options (and CUE policies) of every source.
	Options func() render.Options
	// RenderLimit bounds one render from outside, as the pipeline's.
	RenderLimit time.Duration
	// Scope is the pipeline's check of a render beyond the renderer: the
	// secret scope (by name) and the node ID policy.
	Scope func(source string, r *render.Result) []render.Diagnostic
	// Owner is the source that renders node now ("" for none), Tenant the
	// tenant of a source.
	Owner  func(node string) string
	Tenant func(source string) string
	// Served is what a source serves now; Connected counts a node's
	// connected proxies.
	Served    func(source string) map[string]*render.NodeConfig
	Connected func(node string) int
	// Reporter finds the forge client of a source (its commitStatus),
	// which also lists its pull requests and comments on them.
	Reporter func(source string) (forge.Reporter, error)
	// Post queues the statuses and comments (the core's dispatcher).
	Post prs.Poster
	// Renders bounds the previews rendering at once (zero:
	// DefaultRenders).
	Renders int
	Log     logr.Logger
}

// Previews are the previews of every EnvoySource that enables them.
type Previews struct {
	home    Home
	ctx     context.Context
	stop    context.CancelFunc
	renders chan struct{}

	mu      sync.Mutex
	sources map[string]*source
}

// source is one EnvoySource's previews.
type source struct {
	name        string
	concurrency int
	queue       *prs.Queue
	stop        context.CancelFunc
	swept       bool // the work areas left by an earlier run were checked

	mu      sync.Mutex
	fetcher prs.GitFetcher
	open    map[int64]forge.OpenPullRequest // by number, as last listed
}

// New returns the previews of home; Stop ends them.
func New(home Home) *Previews {
	ctx, stop := context.WithCancel(context.Background())
	return &Previews{
		home: home, ctx: ctx, stop: stop,
		renders: make(chan struct{}, cmp.Or(max(home.Renders, 0), DefaultRenders)),
		sources: map[string]*source{},
	}
}

// Enabled reports whether es previews its pull requests.
func Enabled(es *v1alpha1.EnvoySource) bool {
	s := es.Spec
	return s.Previews != nil && s.Previews.Enabled && s.Git != nil && s.CommitStatus != nil && s.Git.Ref != nil && s.Git.Ref.Branch != ""
}

// Sync polls the forge of es (named name in the pipeline) for its open
// pull requests and previews each new head; it returns what its status
// says, nil when es previews nothing.
func (p *Previews) Sync(ctx context.Context, es *v1alpha1.EnvoySource, name string) *v1alpha1.PreviewsStatus {
	if !Enabled(es) {
		p.Drop(name)
		return nil
	}
	src, err := p.sourceOf(ctx, es, name)
	if err != nil {
		return &v1alpha1.PreviewsStatus{Message: err.Error()}
	}
	rep, err := p.home.Reporter(name)
	if err != nil {
		return src.status(fmt.Sprintf("EnvoySource %s/%s: spec.commitStatus: the forge cannot be asked for pull requests yet: %v", es.Namespace, es.Name, err))
	}
	lister, ok := rep.(forge.PullLister)
	if !ok {
		return src.status(fmt.Sprintf("EnvoySource %s/%s: spec.commitStatus: provider %q cannot list pull requests", es.Namespace, es.Name, es.Spec.CommitStatus.Provider))
	}
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	listed, truncated, err := lister.OpenPullRequests(lctx, es.Spec.Git.Ref.Branch)
	cancel()
	if err != nil {
		// The requests seen open stay open: a forge outage closes none.
		return src.status(fmt.Sprintf("EnvoySource %s/%s: spec.commitStatus: %v", es.Namespace, es.Name, err))
	}
	src.update(p.home.Log.WithValues("source", name), listed, truncated)
	msg := ""
	if truncated {
		msg = fmt.Sprintf("more than %d pull requests are open into %s: the %d listed first are previewed", forge.MaxOpenPullRequests, es.Spec.Git.Ref.Branch, len(listed))
	}
	return src.status(msg)
}

// sourceOf returns name's previews, set up (or its fetch configuration
// refreshed) from es.
func (p *Previews) sourceOf(ctx context.Context, es *v1alpha1.EnvoySource, name string) (*source, error) {
	var secret *corev1.Secret
	if ref := envoysource.SecretName(es); ref != "" {
		secret = &corev1.Secret{}
		if err := p.home.Reader.Get(ctx, types.NamespacedName{Namespace: es.Namespace, Name: ref}, secret); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("EnvoySource %s/%s: spec.git.secretRef: Secret %s/%s does not exist", es.Namespace, es.Name, es.Namespace, ref)
			}
			return nil, fmt.Errorf("EnvoySource %s/%s: spec.git.secretRef: read Secret %s/%s: %w", es.Namespace, es.Name, es.Namespace, ref, err)
		}
	}
	fetcher := prs.GitFetcher{Source: envoysource.GitConfig(es, name, secret, p.home.Env), Root: p.home.Root}
	concurrency := int(cmp.Or(es.Spec.Previews.Concurrency, prs.DefaultConcurrency))

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctx.Err() != nil {
		return nil, p.ctx.Err()
	}
	src := p.sources[name]
	if src != nil && src.concurrency != concurrency {
		// A new bound takes a new queue; the requests are submitted again.
		src.stop()
		src = nil
	}
	if src == nil {
		src = &source{name: name, concurrency: concurrency, open: map[int64]forge.OpenPullRequest{}}
		qctx, stop := context.WithCancel(p.ctx)
		src.stop = stop
		pv := &prs.Previewer{
			Source:  name,
			Fetch:   src.fetch,
			Render:  func(ctx context.Context, files fs.FS) *render.Result { return p.render(ctx, name, files) },
			Served:  func() map[string]*render.NodeConfig { return p.home.Served(name) },
			Proxies: func(node string) int { return p.proxies(name, node) },
			Post:    p.home.Post,
			Log:     p.home.Log,
		}
		src.queue = prs.NewQueue(qctx, concurrency, pv.Run, func(_ string, n int64) { src.remove(p.home.Log, n) })
		p.sources[name] = src
	}
	src.mu.Lock()
	src.fetcher = fetcher
	src.mu.Unlock()
	return src, nil
}

// fetch fetches a request's head with the source's current configuration.
func (s *source) fetch(ctx context.Context, req prs.Request) (*sources.Result, error) {
	s.mu.Lock()
	f := s.fetcher
	s.mu.Unlock()
	return f.Fetch(ctx, req)
}

func (s *source) remove(log logr.Logger, n int64) {
	s.mu.Lock()
	f := s.fetcher
	s.mu.Unlock()
	if err := f.Remove(n); err != nil {
		log.Error(err, "pull request closed; its work area stays", "source", s.name, "pullRequest", n)
	}
}

// update hands the queue the heads that changed and the requests no
// longer open. A truncated listing closes nothing: a request it left out
// may still be open.
func (s *source) update(log logr.Logger, listed []forge.OpenPullRequest, truncated bool) {
	now := make(map[int64]forge.OpenPullRequest, len(listed))
	for _, pr := range listed {
		now[pr.Number] = pr
	}
	s.mu.Lock()
	var submit []prs.Request
	for _, pr := range listed {
		if old, ok := s.open[pr.Number]; ok && old.HeadSHA == pr.HeadSHA {
			continue
		}
		submit = append(submit, prs.Request{Number: pr.Number, HeadSHA: pr.HeadSHA, HeadRef: pr.HeadRef, Fork: pr.Fork})
	}
	if !truncated {
		for n := range s.open {
			if _, ok := now[n]; !ok {
				submit = append(submit, prs.Request{Number: n, Closed: true})
			}
		}
		s.open = now
	} else {
		maps.Copy(s.open, now)
	}
	var stale []int64
	if !s.swept && !truncated {
		s.swept = true
		areas, err := s.fetcher.WorkAreas()
		if err != nil {
			log.Error(err, "could not list the work areas of earlier pull requests")
		}
		for _, n := range areas {
			if _, ok := now[n]; !ok {
				stale = append(stale, n)
			}
		}
	}
	s.mu.Unlock()
	for _, n := range stale {
		submit = append(submit, prs.Request{Number: n, Closed: true})
	}
	for _, req := range submit {
		if err := s.queue.Submit(s.name, req); err != nil {
			log.Error(err, "pull request not previewed", "pullRequest", req.Number)
		}
	}
}

// status is the source's status.previews: the open requests, newest
// first, at most v1alpha1.MaxPreviewStatuses.
func (s *source) status(msg string) *v1alpha1.PreviewsStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	numbers := slices.Sorted(maps.Keys(s.open))
	slices.Reverse(numbers)
	out := &v1alpha1.PreviewsStatus{OpenCount: int32(min(len(numbers), forge.MaxOpenPullRequests)), Message: msg}
	for _, n := range numbers[:min(len(numbers), v1alpha1.MaxPreviewStatuses)] {
		pr := s.open[n]
		out.Open = append(out.Open, v1alpha1.PullRequestPreview{Number: n, Head: pr.HeadSHA, Fork: pr.Fork})
	}
	return out
}

// render renders a head as the source's commits are rendered: the same
// options and policies, the same bound, the same scope; a node another
// source renders is refused as the commit path refuses it, and taken out
// of the comparison, so that nothing of its owner's configuration or
// proxies is shown. It holds one of the controller's render slots.
func (p *Previews) render(ctx context.Context, source string, files fs.FS) *render.Result {
	select {
	case p.renders <- struct{}{}:
		defer func() { <-p.renders }()
	case <-ctx.Done():
		return &render.Result{Diagnostics: []render.Diagnostic{{Pos: render.Position{File: "(configuration)"}, Message: "the preview was stopped before it rendered"}}}
	}
	res, stopped := pipeline.RenderWithin(ctx, files, p.home.Options(), p.home.RenderLimit)
	<-stopped // the slot bounds the renders really running
	if p.home.Scope != nil {
		res.Diagnostics = append(res.Diagnostics, p.home.Scope(source, res)...)
	}
	refused := RefuseOwned(source, res, p.home.Owner, p.home.Tenant)
	res.Diagnostics = append(res.Diagnostics, refused...)
	return res
}

// RefuseOwned takes out of r the nodes another source renders, and
// returns for each the diagnostic the commit path gives it
// (pipeline.Conflict's message): another namespace's node is named as
// taken, nothing more.
func RefuseOwned(source string, r *render.Result, owner func(string) string, tenant func(string) string) []render.Diagnostic {
	var out []render.Diagnostic
	for _, node := range slices.Sorted(maps.Keys(r.Nodes)) {
		o := owner(node)
		if o == "" || o == source {
			continue
		}
		c := pipeline.Conflict{Node: node, Owner: o, Contender: source}
		if tenant(o) != tenant(source) {
			c = pipeline.Conflict{Node: node, Contender: source, Foreign: true}
		}
		delete(r.Nodes, node)
		out = append(out, render.Diagnostic{Pos: render.Position{File: "(configuration)"}, Rule: render.RuleNode, Message: c.Message(source)})
	}
	return out
}

// proxies is a node's blast radius as source's tenant may see it: the
// proxies connected to a node its tenant owns; none for a node nobody
// owns yet (the proxies waiting for it may be any namespace's).
func (p *Previews) proxies(source, node string) int {
	o := p.home.Owner(node)
	if o == "" || p.home.Tenant(o) != p.home.Tenant(source) {
		return 0
	}
	return p.home.Connected(node)
}

// Drop stops the previews of name (gone, or no longer previewing) and
// removes the work areas of its open requests.
func (p *Previews) Drop(name string) {
	p.mu.Lock()
	src := p.sources[name]
	delete(p.sources, name)
	p.mu.Unlock()
	if src == nil {
		return
	}
	src.mu.Lock()
	open := slices.Collect(maps.Keys(src.open))
	src.open = map[int64]forge.OpenPullRequest{}
	src.mu.Unlock()
	for _, n := range open {
		_ = src.queue.Submit(name, prs.Request{Number: n, Closed: true})
	}
	src.queue.Wait()
	src.stop()
}

// Stop ends every preview and waits for them.
func (p *Previews) Stop() {
	p.stop()
	p.mu.Lock()
	all := slices.Collect(maps.Values(p.sources))
	p.mu.Unlock()
	for _, s := range all {
		s.queue.Wait()
	}
}

// WorkRoot is where the previews of a controller with state directory
// stateDir keep their work areas.
func WorkRoot(stateDir string) string { return filepath.Join(stateDir, "previews") }
