package core

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/netguard"
	"github.com/legate-dev/legate/pipeline"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/sds"
	"github.com/legate-dev/legate/xds"
)

// Store is what the core keeps its state in: the revisions and the outbox
// of commit statuses not yet delivered (boltstore, kubestore).
type Store interface {
	revisions.Store
	revisions.Outbox
}

// Options are everything a home supplies to the core. Store and Secrets
// are required; every other field is optional.
type Options struct {
	// Store keeps revisions, node records and the commit-status outbox.
	Store Store
	// Secrets reads the key material of the external secrets a
	// configuration refers to (files, Kubernetes Secrets).
	Secrets sds.Resolver
	// Endpoints builds the load assignments a configuration asks the home
	// for (Kubernetes EndpointSlices); nil: none.
	Endpoints sds.EndpointResolver

	// Authorizer checks a stream's node ID against its client
	// certificate; nil admits every stream (xDS without mutual TLS).
	Authorizer xds.Authorizer
	// Recheck checks, at every push, that a stream may still receive its
	// node; nil checks nothing beyond the Authorizer.
	Recheck xds.Recheck
	// ProxyTenant is the tenant a stream's credentials name (the
	// namespace of its client certificate); with Tenant, it tells a
	// node owner's own proxies from its guests, whose answers count only
	// while the owner has none (see revisions.Options.TenantOf). nil
	// names none.
	ProxyTenant func(ctx context.Context) string

	// Render, Scope, Tenant and Rerender are the pipeline's (see
	// pipeline.Options); RenderLimit bounds one render from outside.
	Render      func(source string) render.Options
	Scope       func(source string, result *render.Result) []render.Diagnostic
	Tenant      func(source string) string
	Rerender    func(source string)
	RenderLimit time.Duration
	// Rollouts returns a source's progressive rollout plan (nil: none);
	// Analyzer runs the analyses of those that have one. See
	// revisions.Options.
	Rollouts func(source string) *rollout.Plan
	Analyzer rollout.Analyzer

	// Reporters posts the commit statuses of the sources it names (a home
	// whose sources are fixed at start); ReporterOf finds the reporter of
	// a source that is not in it (a home whose sources come and go, see
	// forge.DispatcherOptions.Lookup). With neither, no commit status is
	// posted and Statuses and Feedback are nil.
	Reporters  map[string]forge.Reporter
	ReporterOf func(source string) (forge.Reporter, error)
	// PublicURL is where people reach the status API; commit statuses
	// link to it when it is set.
	PublicURL string

	Tuning     Tuning
	Log        logr.Logger
	Registerer prometheus.Registerer
}

// Core is the assembled engine, xDS server, SDS, pipeline and commit-status
// feedback of one home. Build it with New; its accessors are safe for
// concurrent use.
type Core struct {
	tuning   Tuning
	log      logr.Logger
	engine   *revisions.Engine
	xds      *xds.Server
	sds      *sds.Server
	pipeline *pipeline.Pipeline
	statuses *forge.Dispatcher // nil without reporters
	feedback *forge.Feedback   // nil without reporters

	// engineOpts and statusOpts are what New passed on (tests read them).
	engineOpts revisions.Options
	statusOpts forge.DispatcherOptions
}

// New builds the core. Its order is the components' dependencies, written
// out once: the xDS server first (it needs only the engine's ObserveProxy,
// which it cannot call before a gRPC server built from it serves a
// stream, and that server exists only after New returns); SDS over it
// (every publication goes through SDS to xDS); the engine publishing
// through SDS; the pipeline applying to the engine; the commit-status
// feedback observing the engine.
func New(opts Options) (*Core, error) {
	if opts.Store == nil {
		return nil, errors.New("core: no store")
	}
	if opts.Secrets == nil {
		return nil, errors.New("core: no secret resolver")
	}
	if err := opts.Tuning.Validate(); err != nil {
		return nil, err
	}
	log := opts.Log
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	c := &Core{tuning: opts.Tuning.withDefaults(), log: log}
	var err error

	// engine is read by the observer only once a stream is served, which
	// is after New returned (see above); the variable, not c.engine, is
	// what the closure holds, so nothing else can swap it.
	var engine *revisions.Engine
	c.xds, err = xds.New(xds.Options{
		Observer:              xds.ObserverFunc(func(ev xds.Event) { engine.ObserveProxy(ev) }),
		Authorizer:            opts.Authorizer,
		Recheck:               opts.Recheck,
		Tenant:                opts.ProxyTenant,
		Registerer:            opts.Registerer,
		Log:                   log.WithName("xds"),
		MaxConnections:        c.tuning.XDSMaxConnections,
		MaxConnectionsSetting: KnobXDSMaxConnections.String(),
	})
	if err != nil {
		return nil, fmt.Errorf("xDS server: %w", err)
	}

	c.sds = sds.NewServer(opts.Secrets, c.xds.SetSnapshot, log.WithName("sds"))
	if opts.Endpoints != nil {
		c.sds = c.sds.WithEndpoints(opts.Endpoints)
	}

	c.engineOpts = revisions.Options{
		Store:      opts.Store,
		Publisher:  c.sds,
		History:    c.tuning.History,
		Threshold:  c.tuning.TaintThreshold,
		Timeout:    c.tuning.AnswerTimeout,
		Rollouts:   opts.Rollouts,
		Analyzer:   opts.Analyzer,
		TenantOf:   opts.Tenant,
		Registerer: opts.Registerer,
		Log:        log.WithName("revisions"),
	}
	if engine, err = revisions.New(c.engineOpts); err != nil {
		return nil, fmt.Errorf("revision engine: %w", err)
	}
	c.engine = engine

	c.pipeline, err = pipeline.New(pipeline.Options{
		Engine:      c.engine,
		Render:      opts.Render,
		Scope:       opts.Scope,
		Tenant:      opts.Tenant,
		Prepare:     func(_ string, r *render.Result) { c.sds.Warm(externalSecrets(r)) },
		RenderLimit: opts.RenderLimit,
		Rerender:    opts.Rerender,
		Registerer:  opts.Registerer,
		Log:         log.WithName("pipeline"),
	})
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}

	if len(opts.Reporters) > 0 || opts.ReporterOf != nil {
		statusLog := log.WithName("commit-status")
		c.statusOpts = forge.DispatcherOptions{
			Lookup:     opts.ReporterOf,
			MaxBackoff: c.tuning.StatusMaxBackoff,
			Logger:     slog.New(logr.ToSlogHandler(statusLog)),
		}
		c.statuses = forge.NewDispatcher(opts.Store, maps.Clone(opts.Reporters), c.statusOpts)
		targets := make(map[string]bool, len(opts.Reporters))
		for name := range opts.Reporters {
			targets[name] = true
		}
		c.feedback = forge.NewFeedback(c.statuses, targets, opts.PublicURL, statusLog)
		c.engine.Subscribe(c.feedback.Observe)
	}
	return c, nil
}

// externalSecrets lists the external secrets of every node of r, which the
// pipeline has SDS read before the engine publishes them.
func externalSecrets(r *render.Result) []render.ExternalSecret {
	var out []render.ExternalSecret
	for _, n := range r.Nodes {
		out = append(out, n.ExternalSecrets...)
	}
	return out
}

// Engine is the revision engine.
func (c *Core) Engine() *revisions.Engine { return c.engine }

// XDS is the ADS server; a home builds its gRPC server with
// XDS().NewGRPCServer and its transport credentials.
func (c *Core) XDS() *xds.Server { return c.xds }

// SDS serves publications with their external secrets and endpoints; a
// home calls its Refresh methods when what they read changed.
func (c *Core) SDS() *sds.Server { return c.sds }

// Pipeline is the step a home runs on every fetch.
func (c *Core) Pipeline() *pipeline.Pipeline { return c.pipeline }

// Owner is the source owning node: the leader's pipeline, else what the
// engine mirrored of the store (a follower's pipeline is empty).
func (c *Core) Owner(node string) string {
	if owner := c.pipeline.Owner(node); owner != "" {
		return owner
	}
	return c.engine.Ownership(node).Owner
}

// Statuses delivers commit statuses (nil without reporters).
func (c *Core) Statuses() *forge.Dispatcher { return c.statuses }

// Feedback turns the engine's outcomes into commit statuses (nil without
// reporters).
func (c *Core) Feedback() *forge.Feedback { return c.feedback }

// Tuning is the tuning the core runs with, defaults filled in.
func (c *Core) Tuning() Tuning { return c.tuning }

// RunEngine runs the engine (answers and answer timeouts) until ctx ends.
// It returns nil when ctx ended, else the engine's error.
func (c *Core) RunEngine(ctx context.Context) error {
	if err := c.engine.Run(ctx); err != nil && ctx.Err() == nil {
		return fmt.Errorf("revision engine: %w", err)
	}
	return nil
}

// RunStatuses delivers commit statuses until ctx ends (at once without
// reporters). A home whose statuses are posted by one leader runs it
// there alone.
func (c *Core) RunStatuses(ctx context.Context) error {
	if c.statuses == nil {
		return nil
	}
	if err := c.statuses.Run(ctx); err != nil && ctx.Err() == nil {
		return fmt.Errorf("commit statuses: %w", err)
	}
	return nil
}

// Run runs the engine and the commit-status dispatcher until ctx ends or
// one of them fails; then it stops the other and returns the error (nil
// when ctx ended).
func (c *Core) Run(ctx context.Context) error {
	parts := []Part{{Run: c.RunEngine}}
	if c.statuses != nil {
		// RunStatuses returns at once without a dispatcher, which would
		// end the engine too.
		parts = append(parts, Part{Run: c.RunStatuses})
	}
	return RunParts(ctx, parts...)
}

// ListenXDS opens the xDS listener on addr (setting names the flag or
// field that chose it, for errors), holding at most XDSMaxConnections
// client connections open (xds.Server.BoundListener).
func (c *Core) ListenXDS(addr, setting string) (net.Listener, error) {
	lis, err := netguard.Listen("xDS", addr, setting)
	if err != nil {
		return nil, err
	}
	return c.xds.BoundListener(lis), nil
}

// XDSServer serves ADS on a listener until stopped: legate's lean
// transport (xds.Server.NewTransport) or grpc-go's server
// (xds.Server.NewGRPCServer).
type XDSServer interface {
	Serve(net.Listener) error
	Stop()
}

// NewXDSServer returns the ADS server Tuning.XDSTransport names, over TLS
// with tlsConfig when it is not nil (ServerTLS).
func (c *Core) NewXDSServer(tlsConfig *tls.Config) XDSServer {
	if c.tuning.XDSTransport == XDSTransportGRPC {
		var opts []grpc.ServerOption
		if tlsConfig != nil {
			opts = append(opts, grpc.Creds(credentials.NewTLS(tlsConfig)))
		}
		return c.xds.NewGRPCServer(opts...)
	}
	return c.xds.NewTransport(tlsConfig)
}

// ServeGRPC serves gs on lis until gs stops. It returns nil when gs was
// stopped, and the reason otherwise (a listener that failed).
func ServeGRPC(gs XDSServer, lis net.Listener) error {
	if err := gs.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("serve xDS on %s: %w", lis.Addr(), err)
	}
	return nil
}
