package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/legate-dev/legate/core"
	"github.com/legate-dev/legate/envoydeployment"
	"github.com/legate-dev/legate/kubecache"
	"github.com/legate-dev/legate/netguard"
	"github.com/legate-dev/legate/pki/kubepki"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions/kubereplicas"
	"github.com/legate-dev/legate/revisions/kubestore"
	"github.com/legate-dev/legate/rollout/kuberollout"
	"github.com/legate-dev/legate/sds"
	"github.com/legate-dev/legate/sds/kubeendpoints"
	"github.com/legate-dev/legate/sds/kubesecrets"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/tenancy"
	"github.com/legate-dev/legate/tenancy/kubetenancy"
	"github.com/legate-dev/legate/xds"
)

// Controller is one running Kubernetes home.
type Controller struct {
	opts   Options
	log    logr.Logger
	mgr    manager.Manager
	client client.Client // direct: reads what it writes
	grpc   core.XDSServer
	// core owns the engine, pipeline, xDS and SDS servers and the
	// commit-status feedback; the controller reads them from it.
	core     *core.Core
	rollouts *kuberollout.Plans
	xdsLis   net.Listener
	httpLis  net.Listener
	http     *httpAPI
	recorder events.EventRecorder

	store    kubestore.Store
	replicas *kubereplicas.Replicas // nil without leader election

	tenancy *kubetenancy.Checker

	webhookLis net.Listener     // nil without admission webhooks
	webhookTLS xds.Certificates // the webhooks' certificate: files or legate's PKI
	issuer     *kubepki.Issuer  // nil without legate's PKI
	fetchGuard *netguard.Guard  // of every fetch an object points at (sources.NewFetchGuard)

	// one reconciler per kind, each with its own state (reconcilers.go)
	envoyConfigs     *envoyConfigReconciler
	envoySources     *envoySourceReconciler
	policyConfigMaps *policyReconciler
	// the requests legate raises itself (engine outcomes, renders to do
	// again), by kind (Controller.trigger)
	configRequests, sourceRequests *requests
}

// Scheme holds the types the controller reads and writes (kubecache.Scheme).
func Scheme() (*runtime.Scheme, error) { return kubecache.Scheme() }

// New builds the controller; Run starts it.
func New(opts Options) (*Controller, error) {
	if opts.Config == nil || opts.Namespace == "" {
		return nil, errors.New("the controller needs a Kubernetes configuration and its namespace")
	}
	opts.Config = unthrottled(opts.Config)
	if opts.XDSAddr == "" {
		opts.XDSAddr = DefaultXDSAddr
	}
	if err := opts.Tuning.Validate(); err != nil {
		return nil, err
	}
	readTokens, err := opts.Tuning.ReadTokens()
	if err != nil {
		return nil, err
	}
	// legate's PKI is mutual TLS too: it issues every proxy's certificate.
	mutual := opts.XDSClientCA != "" || opts.PKI != nil
	xdsSec := core.XDSSecurity{Addr: opts.XDSAddr, TLS: mutual || opts.XDSTLSCert != "", MutualTLS: mutual}
	if err := opts.Tuning.CheckXDSExposure(xdsSec); err != nil {
		return nil, err
	}
	// errors name the field and flag as in legate serve (core.XDSTLSFiles)
	xdsTLS, err := core.XDSTLSFiles{Cert: opts.XDSTLSCert, Key: opts.XDSTLSKey, ClientCA: opts.XDSClientCA}.TLSConfig()
	if err != nil {
		return nil, err
	}
	if opts.StateDir == "" {
		opts.StateDir = filepath.Join(os.TempDir(), "legate-controller")
	}
	if opts.Render == nil {
		opts.Render = func(map[string][]byte) render.Options { return render.Options{} }
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	if opts.HTTPAddr == "" {
		opts.HTTPAddr = DefaultHTTPAddr
	}
	if opts.ProbeAddr == "" {
		opts.ProbeAddr = "0"
	}
	mopts := manager.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: opts.ProbeAddr, Logger: opts.Log}
	if mopts.Cache, err = kubecache.Options(opts.Namespace, opts.WatchNamespace); err != nil {
		return nil, err
	}
	maps.Copy(mopts.Cache.ByObject, envoydeployment.CacheByObject()) // legate's own objects of those kinds
	if opts.Replica == "" {
		if opts.Replica, err = os.Hostname(); err != nil {
			return nil, err
		}
	}
	if opts.AnswersInterval <= 0 {
		opts.AnswersInterval = kubereplicas.DefaultAnswersInterval
	}
	if opts.LeaderElect {
		timing := kubereplicas.Timing{LeaseDuration: opts.LeaseDuration, RenewDeadline: opts.RenewDeadline, RetryPeriod: opts.RetryPeriod}
		if err := kubereplicas.Elect(&mopts, opts.Config, opts.Namespace, opts.Replica, timing); err != nil {
			return nil, err
		}
	}
	mgr, err := ctrl.NewManager(opts.Config, mopts)
	if err != nil {
		return nil, fmt.Errorf("controller manager: %w", err)
	}
	direct, err := client.New(opts.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	c := &Controller{
		opts: opts, log: opts.Log, mgr: mgr, client: direct, recorder: mgr.GetEventRecorder("legate"),
		configRequests: newRequests(), sourceRequests: newRequests(),
		tenancy:    &kubetenancy.Checker{Rule: tenancy.Rule{Home: opts.Namespace, Policy: opts.NodeIDPolicy}, Cache: mgr.GetClient()},
		fetchGuard: sources.NewFetchGuard(opts.FetchAllowNetworks),
	}
	c.tenancy.Owner = c.ownerOf
	c.http = &httpAPI{c: c, reg: prometheus.NewRegistry(), readTokens: readTokens}
	if opts.PKI != nil {
		if xdsTLS != nil {
			return nil, errors.New("xDS certificates come from files (--xds-tls-cert, --xds-tls-key, --xds-client-ca) or from legate's PKI (--pki-ca-secret), not both")
		}
		if xdsTLS, err = c.startPKI(direct); err != nil {
			return nil, fmt.Errorf("legate's PKI: %w", err)
		}
	}
	if opts.ProbeAddr != "0" {
		if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return nil, err
		}
		if err := mgr.AddReadyzCheck("restored", func(*http.Request) error {
			if !c.http.ready.Load() {
				return errors.New("restoring the published revisions and filling the caches")
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	// Which authorizer follows from the options alone: legate's PKI binds
	// a certificate to its Pod's namespace as well (kubepki.NamespacedBinding),
	// files bind it to the node IDs it names.
	var authorizer xds.Authorizer
	var recheck xds.Recheck
	switch {
	case opts.PKI != nil:
		authorizer, recheck = kubepki.NamespacedBinding(c.tenancy.MayServe), c.tenancy.Recheck
	case mutual:
		authorizer, recheck = xds.CertificateBinding, c.tenancy.Recheck
	}
	c.store = kubestore.New(direct, opts.Namespace)
	c.rollouts = &kuberollout.Plans{}
	c.core, err = core.New(core.Options{
		Store: c.store,
		Secrets: kubesecrets.Resolver{Client: mgr.GetAPIReader(), Plaintext: sds.Plaintext{
			Insecure: !mutual, Allowed: opts.XDSInsecureSecrets,
			MutualTLS: "set --xds-tls-cert, --xds-tls-key and --xds-client-ca",
		}},
		Endpoints:  kubeendpoints.Resolver{Cache: mgr.GetCache(), Direct: mgr.GetAPIReader()},
		Authorizer: authorizer,
		Recheck:    recheck,
		// With Tenant, tells the platform's own proxies of a node it
		// shares from its tenants': theirs count only while it has none.
		ProxyTenant: kubetenancy.ProxyTenant,
		Render:      func(string) render.Options { return c.renderOptions(c.policies()) },
		Scope:       c.scope,
		Tenant:      tenancy.TenantOf,
		Rerender:    c.trigger,
		ReporterOf:  c.lookupReporter,
		Rollouts:    c.rollouts.Plan,
		Analyzer:    kuberollout.Analyses{Plans: c.rollouts, Reader: mgr.GetAPIReader()},
		PublicURL:   opts.PublicURL,
		Tuning:      opts.Tuning,
		Log:         opts.Log,
		Registerer:  c.http.reg,
	})
	if err != nil {
		return nil, err
	}
	c.core.Engine().Subscribe(c.outcome)
	c.core.Engine().SubscribeRollouts(c.rolloutMoved)
	// Several controllers may run in one process (tests, and the replicas
	// of the HA tests): the metric names they share are the manager's.
	skip := true
	if err := c.setupReconcilers(mgr, skip); err != nil {
		return nil, err
	}
	if err := c.watchSecrets(skip); err != nil {
		return nil, err
	}
	if err := c.watchEndpointSlices(skip); err != nil {
		return nil, err
	}
	if err := c.watchSharing(context.Background()); err != nil {
		return nil, err
	}
	if opts.LeaderElect {
		if c.replicas, err = kubereplicas.New(mgr, kubereplicas.Options{
			Config: opts.Config, Namespace: opts.Namespace, Replica: opts.Replica,
			Engine: c.core.Engine(), Records: c.store, Client: direct, Counted: c.counted,
			Log: opts.Log, SkipNameValidation: skip,
		}); err != nil {
			return nil, err
		}
	}
	if c.xdsLis, err = c.core.ListenXDS(opts.XDSAddr, "--xds-addr"); err != nil {
		return nil, err
	}
	c.grpc = c.core.NewXDSServer(xdsTLS)
	if warning := core.XDSExposureWarning(c.xdsLis.Addr(), xdsSec); warning != "" {
		c.log.Info("WARNING: " + warning)
	}
	if opts.HTTPAddr != "0" {
		if c.httpLis, err = netguard.Listen("the status API", opts.HTTPAddr, "--http-addr"); err != nil {
			_ = c.xdsLis.Close()
			return nil, err
		}
		c.httpLis = netguard.Bound(c.httpLis, "the status API", c.log)
	}
	if err := c.listenWebhooks(); err != nil {
		_ = c.xdsLis.Close()
		if c.httpLis != nil {
			_ = c.httpLis.Close()
		}
		return nil, err
	}
	return c, nil
}

// HTTPAddr is where the status API listens ("" when it is off).
func (c *Controller) HTTPAddr() string {
	if c.httpLis == nil {
		return ""
	}
	return c.httpLis.Addr().String()
}

// XDSAddr is where the ADS server listens.
func (c *Controller) XDSAddr() string { return c.xdsLis.Addr().String() }

// Run restores the published revisions from the API server, serves them
// and reconciles until ctx ends or a part fails: the manager (and the
// reconcilers it runs), the engine or the xDS server. Then it stops the
// others and returns the first error (nil when ctx ended).
func (c *Controller) Run(ctx context.Context) error {
	defer func() { _ = c.xdsLis.Close() }()
	if c.httpLis != nil {
		defer func() { _ = c.httpLis.Close() }()
	}
	// wg.Wait is deferred first so that it runs last, after cancel ended
	// what it waits for.
	var wg sync.WaitGroup
	defer wg.Wait()
	defer c.envoySources.previews.Stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if c.replicas == nil {
		if err := c.rollouts.Load(ctx, c.client, c.opts.WatchNamespace); err != nil {
			if ctx.Err() != nil {
				return nil // stopped while reading
			}
			return err
		}
		if err := c.core.Engine().Restore(ctx); err != nil {
			if ctx.Err() != nil {
				return nil // stopped while restoring
			}
			return err
		}
		c.core.Feedback().Seed(c.core.Engine().Nodes())
	} else {
		// Serve what the store says until this replica leads, then
		// decide from there.
		if err := c.core.Engine().Follow(ctx); err != nil {
			c.log.Error(err, "some published revisions cannot be served yet; retrying")
		}
		wg.Go(func() { c.replicas.Run(ctx, c.opts.AnswersInterval) })
		wg.Go(func() {
			select {
			case <-ctx.Done():
				return
			case <-c.mgr.Elected():
			}
			if err := c.rollouts.Load(ctx, c.client, c.opts.WatchNamespace); err != nil {
				c.log.Error(err, "rollouts under way whose policy cannot be read end without promotion")
			}
			if err := c.core.Engine().Lead(ctx); err != nil {
				c.log.Error(err, "leading from the stored state")
			}
			c.core.Feedback().Seed(c.core.Engine().Nodes())
			c.log.Info("this replica leads", "replica", c.opts.Replica)
			if c.mgr.GetCache().WaitForCacheSync(ctx) {
				c.sweepOwners(ctx)
			}
		})
	}
	// Commit statuses are posted by the leader alone; their failure stops
	// the manager, and so Run.
	if err := c.mgr.Add(manager.RunnableFunc(c.core.RunStatuses)); err != nil {
		return err
	}
	if c.httpLis != nil {
		wg.Go(func() {
			if err := c.http.serve(ctx, c.httpLis); err != nil {
				c.log.Error(err, "the status API stopped")
			}
		})
	}
	if c.webhookLis != nil {
		wg.Go(func() {
			if err := c.serveWebhooks(ctx, c.webhookLis); err != nil {
				c.log.Error(err, "the admission webhooks stopped")
			}
		})
	}
	wg.Go(func() {
		if c.mgr.GetCache().WaitForCacheSync(ctx) {
			c.http.ready.Store(true)
			if c.replicas == nil {
				c.sweepOwners(ctx) // with replicas, the leader sweeps once it leads
			}
		}
	})

	// The manager (with the reconcilers), the engine and the xDS server:
	// when one of them stops, so does the controller.
	err := core.RunParts(ctx,
		core.Part{Run: c.mgr.Start},
		core.Part{Run: c.core.RunEngine},
		core.Part{
			Run: func(context.Context) error { return core.ServeGRPC(c.grpc, c.xdsLis) },
			// ADS streams live as long as the proxies: do not wait for them.
			Stop: c.grpc.Stop,
		},
	)
	if err != nil {
		c.log.Error(err, "the controller failed; shutting down")
	}
	return err
}

// counted asks for a status update of the object that configures node:
// its proxy counts changed though its verdict may not have.
func (c *Controller) counted(node string) {
	if owner := c.core.Pipeline().Owner(node); owner != "" {
		c.trigger(owner)
	}
}

// secretScope keeps the secrets an object's configuration references in
// the object's namespace: a bare NAME resolves there, and NAMESPACE/NAME
// of another namespace is refused, so that nobody reaches a Secret of a
// namespace they cannot read through legate.
func secretScope(source string, r *render.Result) []render.Diagnostic {
	ns := tenancy.TenantOf(source)
	return sds.Scope{
		Source: source, Home: ns,
		Explain: fmt.Sprintf("a configuration reads the Secrets of its own namespace %q only", ns),
	}.Apply(r)
}
