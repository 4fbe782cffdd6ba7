package standalone

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/legate-dev/legate/core"
	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/netguard"
	"github.com/legate-dev/legate/pipeline"
	"github.com/legate-dev/legate/readapi"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/boltstore"
	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/sds"
	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/sources"
	gitsource "github.com/legate-dev/legate/sources/git"
	"github.com/legate-dev/legate/xds"
)

// Options are what New needs besides the Config.
type Options struct {
	// Render returns the renderer configuration, shared with `legate
	// validate` so that both give the same verdict. It is called once per
	// render because stages such as CUE policies keep per-render state;
	// nil renders with the defaults. DefaultNode is taken from Config.
	Render func() render.Options
	Log    logr.Logger
	// Analyzer runs the analyses of the sources' rollout policies; nil
	// runs each policy's own analysis (core.Analyses, header values from
	// files).
	Analyzer rollout.Analyzer

	// httpTimeouts replaces the HTTP server's timeouts (tests; zero: the
	// defaults).
	httpTimeouts readapi.Timeouts
	// renderLimit bounds one render from outside (zero: the render's
	// timeout plus a grace); tests shorten it.
	renderLimit time.Duration
}

// Server is one running standalone home.
type Server struct {
	cfg      serveconfig.Config
	log      logr.Logger
	render   func() render.Options
	store    *boltstore.Store
	engine   *revisions.Engine
	pipeline *pipeline.Pipeline
	xds      *xds.Server
	grpc     core.XDSServer
	http     *http.Server
	api      *readapi.API
	xdsLis   net.Listener
	httpLis  net.Listener
	loops    []*sourceLoop
	metrics  *metrics
	// token is the bearer token of mutating calls, read from tokenPath.
	token, tokenPath string
	// core is the engine, xDS, SDS, pipeline and commit statuses, built
	// once (package core); engine, pipeline and xds above are its.
	core *core.Core
	// feedback posts commit statuses; nil when no source has a forge.
	feedback *forge.Feedback
	// secretTicks paces the checks of the secrets directory for changed
	// files (a test replaces it).
	secretTicks func(time.Duration) (<-chan time.Time, func())

	// previews are the pull-request previews (buildPreviews).
	previews *previews
	// renderLimit bounds one render from outside (Options.renderLimit).
	renderLimit time.Duration

	// suspendMu serializes writes of the suspended sources' file.
	suspendMu sync.Mutex
}

// New opens the store, binds the listeners and builds every component. It
// publishes nothing yet: Run restores and starts serving.
func New(cfg serveconfig.Config, opts Options) (s *Server, err error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := opts.Log
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	s = &Server{cfg: cfg, log: log, render: opts.Render, renderLimit: opts.renderLimit}
	if s.render == nil {
		s.render = func() render.Options { return render.Options{} }
	}
	if cfg.SecretsDir != "" {
		if fi, err := os.Stat(cfg.SecretsDir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("secretsDir %s must be an existing directory", cfg.SecretsDir)
		}
	}
	s.secretTicks = func(d time.Duration) (<-chan time.Time, func()) {
		t := time.NewTicker(d)
		return t.C, t.Stop
	}
	if s.token, s.tokenPath, err = cfg.AdminToken(); err != nil {
		return nil, err
	}

	// Every error return below hands back a nil *Server: close the one
	// being built, whatever the named result holds by then.
	built := s
	defer func() {
		if err != nil {
			built.close()
		}
	}()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.metrics = newMetrics(reg)

	if s.store, err = boltstore.Open(filepath.Join(cfg.StateDir, "store")); err != nil {
		return nil, err
	}
	xdsSec := cfg.XDSSecurity()
	xdsTLS, err := cfg.XDSTLS.Files().TLSConfig()
	if err != nil {
		return nil, err
	}
	var authorizer xds.Authorizer
	if xdsSec.MutualTLS {
		authorizer = xds.CertificateBinding
	}
	reporters := map[string]forge.Reporter{}
	// The sources of one repository (a monorepo, one source a directory)
	// share its clone: stored once, fetched once for a push.
	clones := gitsource.NewClones("")
	for _, sc := range cfg.Sources {
		b, err := sc.Build(cfg.StateDir, clones)
		if err != nil {
			return nil, err
		}
		l := newSourceLoop(s, sc, b.Source)
		l.status.Kind, l.status.URL = string(b.Kind), b.URL
		s.loops = append(s.loops, l)
		if sc.Forge != nil {
			if reporters[sc.Name], err = sc.Reporter(); err != nil {
				return nil, fmt.Errorf("source %q: forge: %w", sc.Name, err)
			}
		}
	}
	if err := s.pruneClones(filepath.Join(cfg.StateDir, "git")); err != nil {
		return nil, err
	}
	plans, err := cfg.RolloutPlans()
	if err != nil {
		return nil, err
	}
	var rollouts func(string) *rollout.Plan
	analyzer := opts.Analyzer
	if analyzer == nil {
		if analyzer, err = cfg.Analyses(plans); err != nil {
			return nil, err
		}
	}
	if len(plans) > 0 {
		// Without a policy the engine is given no lookup at all: its
		// publication path stays today's.
		rollouts = func(source string) *rollout.Plan { return plans[source] }
	}
	s.core, err = core.New(core.Options{
		Store: s.store,
		Secrets: sds.Files{
			Dir: cfg.SecretsDir,
			Plaintext: sds.Plaintext{
				Insecure:  !xdsSec.MutualTLS,
				Allowed:   cfg.XDSInsecureSecrets,
				MutualTLS: "set --xds-client-ca (legate pki init)",
			},
		},
		Authorizer:  authorizer,
		Render:      s.renderOptions,
		Scope:       s.secretScope,
		Rerender:    func(source string) { s.Trigger(source) },
		RenderLimit: opts.renderLimit,
		Rollouts:    rollouts,
		Analyzer:    analyzer,
		Reporters:   reporters,
		PublicURL:   cfg.PublicURL,
		Tuning:      cfg.Tuning(),
		Log:         log,
		Registerer:  reg,
	})
	if err != nil {
		return nil, err
	}
	s.engine, s.pipeline, s.xds, s.feedback = s.core.Engine(), s.core.Pipeline(), s.core.XDS(), s.core.Feedback()
	s.buildPreviews(reporters)
	if err := s.loadSuspended(); err != nil {
		return nil, err
	}
	secrets, err := cfg.Webhooks.Secrets()
	if err != nil {
		return nil, err
	}

	if err := cfg.CheckXDSExposure(); err != nil {
		return nil, err
	}
	if s.xdsLis, err = s.core.ListenXDS(cfg.XDSAddr, "xdsAddr (--xds-addr)"); err != nil {
		return nil, err
	}
	if s.httpLis, err = netguard.Listen("HTTP", cfg.HTTPAddr, "httpAddr (--http-addr)"); err != nil {
		return nil, err
	}
	s.httpLis = netguard.Bound(s.httpLis, "the status API", s.log)
	s.grpc = s.core.NewXDSServer(xdsTLS)
	if s.http, err = s.newHTTPServer(reg, secrets, opts.httpTimeouts); err != nil {
		return nil, err
	}
	return s, nil
}

// XDSAddr is the address the ADS server listens on.
func (s *Server) XDSAddr() string { return s.xdsLis.Addr().String() }

// HTTPAddr is the address of the status API.
func (s *Server) HTTPAddr() string { return s.httpLis.Addr().String() }

// Run restores the last published revisions from the store, serves them,
// starts every source's fetch loop and serves until ctx is cancelled; then
// it shuts down gracefully and closes the store.
func (s *Server) Run(ctx context.Context) error {
	defer s.close()
	if err := s.engine.Restore(ctx); err != nil {
		return err
	}
	if s.feedback != nil {
		s.feedback.Seed(s.engine.Nodes())
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var wg sync.WaitGroup
	errc := make(chan error, 2)
	wg.Go(func() { errc <- core.ServeGRPC(s.grpc, s.xdsLis) })
	wg.Go(func() {
		if err := s.http.Serve(s.httpLis); !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	})
	wg.Go(func() {
		if err := s.core.Run(ctx); err != nil {
			errc <- err
		}
	})
	if s.cfg.SecretsDir != "" {
		tick, stop := s.secretTicks(s.cfg.SecretsInterval.Duration)
		defer stop()
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick:
					s.core.SDS().Refresh()
				}
			}
		})
	}
	for _, l := range s.loops {
		wg.Go(func() { l.run(ctx) })
	}
	s.log.Info("serving", "xds", s.XDSAddr(), "http", s.HTTPAddr(), "sources", len(s.loops), "adminTokenFile", s.tokenPath)
	if warning := s.cfg.XDSExposureWarning(s.xdsLis.Addr()); warning != "" {
		s.log.Info("WARNING: " + warning)
	}

	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		s.log.Error(err, "server failed; shutting down")
	}
	cancel()
	shutdownCtx, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()
	_ = s.http.Shutdown(shutdownCtx)
	// ADS streams live as long as the proxies: do not wait for them.
	s.grpc.Stop()
	s.previews.shutdown()
	wg.Wait()
	s.log.Info("stopped")
	return err
}

func (s *Server) close() {
	if s.xdsLis != nil {
		_ = s.xdsLis.Close()
	}
	if s.httpLis != nil {
		_ = s.httpLis.Close()
	}
	if s.store != nil {
		_ = s.store.Close()
		s.store = nil
	}
}

// renderOptions are the renderer options of one render of any source:
// the caller's (shared with legate validate) and the server's default node
// and file size limit.
func (s *Server) renderOptions(string) render.Options {
	ropts := s.render()
	ropts.DefaultNode = s.cfg.DefaultNode
	if s.cfg.MaxFileSize > 0 {
		ropts.MaxFileSize = s.cfg.MaxFileSize
	}
	return ropts
}

// secretScope checks and resolves the external secrets of source's render
// against what the source may read below the secrets directory.
func (s *Server) secretScope(source string, result *render.Result) []render.Diagnostic {
	for _, sc := range s.cfg.Sources {
		if sc.Name == source {
			return sds.Scope{
				Source: source, Home: source, Grants: sc.Secrets,
				Explain: fmt.Sprintf("its refs resolve in the directory %q of secretsDir, and others must be granted in the source's secrets list", source+"/"),
			}.Apply(result)
		}
	}
	return nil
}

// Trigger asks the named source to fetch now. It reports whether such a
// source exists.
func (s *Server) Trigger(name string) bool {
	if l := s.loop(name); l != nil {
		l.trigger()
		return true
	}
	return false
}

func (s *Server) loop(name string) *sourceLoop {
	for _, l := range s.loops {
		if l.cfg.Name == name {
			return l
		}
	}
	return nil
}

// Ready reports whether the store was restored and every source has
// finished its first fetch attempt.
func (s *Server) Ready() bool {
	ready, _ := s.readiness()
	return ready
}

// Engine exposes the revision engine (for reporters wired by the caller).
func (s *Server) Engine() *revisions.Engine { return s.engine }

var _ sources.Source = (*gitsource.Source)(nil)
