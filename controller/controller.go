package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/netguard"
	"github.com/legate-dev/legate/pipeline"
	"github.com/legate-dev/legate/pki/kubepki"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/kubereplicas"
	"github.com/legate-dev/legate/revisions/kubestore"
	"github.com/legate-dev/legate/sds"
	"github.com/legate-dev/legate/sds/kubeendpoints"
	"github.com/legate-dev/legate/sds/kubesecrets"
	"github.com/legate-dev/legate/sources"
	kubesrc "github.com/legate-dev/legate/sources/kube"
	"github.com/legate-dev/legate/webhook"
	"github.com/legate-dev/legate/xds"
)

// Controller is one running Kubernetes home.
type Controller struct {
	opts     Options
	log      logr.Logger
	mgr      manager.Manager
	client   client.Client // direct: reads what it writes
	engine   *revisions.Engine
	pipeline *pipeline.Pipeline
	xds      *xds.Server
	secrets  *sds.Server
	grpc     *grpc.Server
	xdsLis   net.Listener
	httpLis  net.Listener
	http     *httpAPI
	events   chan event.GenericEvent // EnvoyConfigs whose status is due
	sourceEv chan event.GenericEvent // EnvoySources whose status is due
	recorder events.EventRecorder

	statuses *forge.Dispatcher
	feedback *forge.Feedback
	store    kubestore.Store
	replicas *kubereplicas.Replicas // nil without leader election

	tenancy tenancy

	webhookLis net.Listener     // nil without admission webhooks
	webhookTLS xds.Certificates // the webhooks' certificate: files or legate's PKI
	issuer     *kubepki.Issuer  // nil without legate's PKI
	fetchGuard *netguard.Guard  // of every fetch an object points at (sources.NewFetchGuard)

	// What EnvoySources share: the memory their files may take, the
	// fetch workers, and the bound of each fetch.
	budget  *sources.Budget
	fetches *sources.FairShare
	timeout time.Duration

	mu            sync.Mutex
	sources       map[types.NamespacedName]*kubesrc.EnvoyConfigSource
	drivers       map[string]*driver        // by pipeline source name
	reporters     map[string]forge.Reporter // by pipeline source name
	reporterSpecs map[string]reporterOf
	// policySet is what every render obeys: dirPolicies and the policy
	// ConfigMaps' entries.
	policySet   map[string][]byte
	dirPolicies map[string][]byte
}

// Scheme holds the types the controller reads and writes.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// New builds the controller; Run starts it.
func New(opts Options) (*Controller, error) {
	if opts.Config == nil || opts.Namespace == "" {
		return nil, errors.New("the controller needs a Kubernetes configuration and its namespace")
	}
	if opts.XDSAddr == "" {
		opts.XDSAddr = DefaultXDSAddr
	}
	mutual := opts.XDSClientCA != "" || opts.PKI != nil
	if xds.BeyondLoopback(opts.XDSAddr) && !mutual {
		return nil, fmt.Errorf("xds address %s reaches beyond loopback without mutual TLS: anyone who reached it could fetch every node's configuration and answer for its proxies; "+
			"set --xds-tls-cert, --xds-tls-key and --xds-client-ca (legate pki init makes them), or listen on 127.0.0.1", opts.XDSAddr)
	}
	grpcOpts, err := xdsTLS(opts)
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
	policyLabel, err := labels.Parse(PolicyLabel)
	if err != nil {
		return nil, err
	}
	// The only ConfigMaps cached are the policy ones (the store reads its
	// own directly).
	proxyLabel, err := labels.Parse(webhook.ProxyLabel)
	if err != nil {
		return nil, err
	}
	mopts.Cache.ByObject = map[client.Object]cache.ByObject{
		// of the controller's namespace alone: no other binds (policies.go)
		&corev1.ConfigMap{}: {Label: policyLabel, Namespaces: map[string]cache.Config{opts.Namespace: {}}},
		// injected pods only, and of them what names their proxy
		&corev1.Pod{}: {Label: proxyLabel, Transform: kubepki.PodMetadata},
	}
	// The cache holds EndpointSlices in full (their endpoints are read on
	// every change) and no object's managed fields.
	mopts.Cache.DefaultTransform = cache.TransformStripManagedFields()
	if opts.WatchNamespace != "" {
		// the watched namespace, and the controller's own for its revisions
		mopts.Cache.DefaultNamespaces = map[string]cache.Config{opts.WatchNamespace: {}, opts.Namespace: {}}
	}
	if opts.Replica == "" {
		if opts.Replica, err = os.Hostname(); err != nil {
			return nil, err
		}
	}
	if opts.AnswersInterval <= 0 {
		opts.AnswersInterval = kubereplicas.DefaultAnswersInterval
	}
	if opts.LeaderElect {
		if mopts.LeaderElectionResourceLockInterface, err = kubereplicas.LeaderLock(opts.Config, opts.Namespace, opts.Replica); err != nil {
			return nil, fmt.Errorf("leader election: %w", err)
		}
		mopts.LeaderElection, mopts.LeaderElectionID, mopts.LeaderElectionNamespace = true, kubereplicas.LeaseName, opts.Namespace
		mopts.LeaderElectionReleaseOnCancel = true
		for _, d := range []struct {
			to   **time.Duration
			from time.Duration
		}{{&mopts.LeaseDuration, opts.LeaseDuration}, {&mopts.RenewDeadline, opts.RenewDeadline}, {&mopts.RetryPeriod, opts.RetryPeriod}} {
			if d.from > 0 {
				*d.to = &d.from
			}
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
		events: make(chan event.GenericEvent, 256), sourceEv: make(chan event.GenericEvent, 256),
		sources: map[types.NamespacedName]*kubesrc.EnvoyConfigSource{}, drivers: map[string]*driver{},
		reporters: map[string]forge.Reporter{}, reporterSpecs: map[string]reporterOf{},
		tenancy:    tenancy{home: opts.Namespace, policy: opts.NodeIDPolicy},
		fetchGuard: sources.NewFetchGuard(opts.FetchAllowNetworks),
	}
	c.http = &httpAPI{c: c, reg: prometheus.NewRegistry()}
	if opts.PKI != nil {
		if grpcOpts != nil {
			return nil, errors.New("xDS certificates come from files (--xds-tls-cert, --xds-tls-key, --xds-client-ca) or from legate's PKI (--pki-ca-secret), not both")
		}
		if grpcOpts, err = c.startPKI(direct); err != nil {
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
	xopts := xds.Options{Log: opts.Log.WithName("xds"), Registerer: c.http.reg, Observer: xds.ObserverFunc(func(ev xds.Event) { c.engine.ObserveProxy(ev) })}
	if mutual {
		xopts.Authorizer = xds.CertificateBinding
	}
	if c.issuer != nil {
		xopts.Authorizer = kubepki.NamespacedBinding(c.mayServe)
	}
	if mutual {
		xopts.Recheck = c.recheck
	}
	if c.xds, err = xds.New(xopts); err != nil {
		return nil, err
	}
	c.secrets = sds.NewServer(kubesecrets.Resolver{Client: mgr.GetAPIReader(), Plaintext: sds.Plaintext{
		Insecure: !mutual, Allowed: opts.XDSInsecureSecrets,
		MutualTLS: "set --xds-tls-cert, --xds-tls-key and --xds-client-ca",
	}}, c.xds.SetSnapshot, opts.Log.WithName("secrets")).
		WithEndpoints(kubeendpoints.Resolver{Cache: mgr.GetCache(), Direct: mgr.GetAPIReader()})
	c.store = kubestore.Store{Client: direct, Namespace: opts.Namespace}
	store := c.store
	if c.engine, err = revisions.New(revisions.Options{
		Store: store, Publisher: c.secrets, Log: opts.Log.WithName("revisions"),
		Registerer: c.http.reg,
	}); err != nil {
		return nil, err
	}
	c.statuses = forge.NewDispatcher(store, nil, forge.DispatcherOptions{
		Lookup: c.lookupReporter, Logger: slog.New(logr.ToSlogHandler(opts.Log.WithName("commit-status"))),
	})
	c.feedback = forge.NewFeedback(c.statuses, nil, opts.PublicURL, opts.Log.WithName("commit-status"))
	c.engine.Subscribe(c.outcome)
	c.engine.Subscribe(c.feedback.Observe)
	if c.pipeline, err = pipeline.New(pipeline.Options{
		Engine: c.engine,
		Render: func(string) render.Options {
			o := opts.Render(c.policies())
			o.EndpointSlices = true
			return o
		},
		Scope:      c.scope,
		Tenant:     tenantOf,
		Prepare:    func(_ string, r *render.Result) { c.secrets.Warm(externalSecrets(r)) },
		Rerender:   c.trigger,
		Registerer: c.http.reg,
		Log:        opts.Log.WithName("pipeline"),
	}); err != nil {
		return nil, err
	}
	// Several controllers may run in one process (tests, and the replicas
	// of the HA tests): the metric names they share are the manager's.
	skip := true
	err = ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.EnvoyConfig{}).
		WithOptions(crcontroller.Options{SkipNameValidation: &skip}).
		WatchesRawSource(source.Channel(c.events, &handler.EnqueueRequestForObject{})).
		Complete(c)
	if err != nil {
		return nil, fmt.Errorf("EnvoyConfig reconciler: %w", err)
	}
	if err := c.watchSources(skip); err != nil {
		return nil, err
	}
	if err := c.watchUntaints(skip); err != nil {
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
			Engine: c.engine, Records: c.store, Client: direct, Counted: c.counted,
			Log: opts.Log, SkipNameValidation: skip,
		}); err != nil {
			return nil, err
		}
	}
	if c.dirPolicies, err = readPolicyDir(opts.PolicyDir); err != nil {
		return nil, err
	}
	c.policySet = c.dirPolicies
	if err := c.watchPolicies(skip); err != nil {
		return nil, err
	}
	if c.xdsLis, err = net.Listen("tcp", opts.XDSAddr); err != nil {
		return nil, fmt.Errorf("listen for xDS on %s: %w", opts.XDSAddr, err)
	}
	c.grpc = c.xds.NewGRPCServer(grpcOpts...)
	if opts.HTTPAddr != "0" {
		if c.httpLis, err = net.Listen("tcp", opts.HTTPAddr); err != nil {
			_ = c.xdsLis.Close()
			return nil, fmt.Errorf("listen for the status API on %s: %w", opts.HTTPAddr, err)
		}
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
// and reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer func() { _ = c.xdsLis.Close() }()
	if c.httpLis != nil {
		defer func() { _ = c.httpLis.Close() }()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	if c.replicas == nil {
		if err := c.engine.Restore(ctx); err != nil {
			if ctx.Err() != nil {
				return nil // stopped while restoring
			}
			return err
		}
		c.feedback.Seed(c.engine.Nodes())
	} else {
		// Serve what the store says until this replica leads, then
		// decide from there.
		if err := c.engine.Follow(ctx); err != nil {
			c.log.Error(err, "some published revisions cannot be served yet; retrying")
		}
		wg.Go(func() { c.replicas.Run(ctx, c.opts.AnswersInterval) })
		wg.Go(func() {
			select {
			case <-ctx.Done():
				return
			case <-c.mgr.Elected():
			}
			if err := c.engine.Lead(ctx); err != nil {
				c.log.Error(err, "leading from the stored state")
			}
			c.feedback.Seed(c.engine.Nodes())
			c.log.Info("this replica leads", "replica", c.opts.Replica)
			if c.mgr.GetCache().WaitForCacheSync(ctx) {
				c.sweepOwners(ctx)
			}
		})
	}
	wg.Go(func() { _ = c.engine.Run(ctx) })
	// Commit statuses are posted by the leader alone.
	if err := c.mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		_ = c.statuses.Run(ctx)
		return nil
	})); err != nil {
		return err
	}
	wg.Go(func() { _ = c.grpc.Serve(c.xdsLis) })
	defer c.grpc.Stop()
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
	return c.mgr.Start(ctx)
}

// outcome asks for a status update of the object whose node an engine
// outcome concerns (a publication, an answer, a rollback).
func (c *Controller) outcome(o revisions.Outcome) { c.trigger(o.Origin.Source) }

// counted asks for a status update of the object that configures node:
// its proxy counts changed though its verdict may not have.
func (c *Controller) counted(node string) {
	if owner := c.pipeline.Owner(node); owner != "" {
		c.trigger(owner)
	}
}

// trigger asks for a reconcile of the object a pipeline source name
// stands for ("envoyconfig/NS/NAME", "envoysource/NS/NAME").
func (c *Controller) trigger(source string) {
	r, ok := parseSource(source)
	if !ok {
		return
	}
	ch := c.events
	if r.Kind == kindEnvoySource {
		ch = c.sourceEv
	}
	select {
	case ch <- event.GenericEvent{Object: r.object()}:
	default: // a reconcile is already due; it reads the latest
	}
}

// secretScope keeps the secrets an object's configuration references in
// the object's namespace: a bare NAME resolves there, and NAMESPACE/NAME
// of another namespace is refused, so that nobody reaches a Secret of a
// namespace they cannot read through legate.
func secretScope(source string, r *render.Result) []render.Diagnostic {
	ns := tenantOf(source)
	return sds.Scope{
		Source: source, Home: ns,
		Explain: fmt.Sprintf("a configuration reads the Secrets of its own namespace %q only", ns),
	}.Apply(r)
}

func externalSecrets(r *render.Result) []render.ExternalSecret {
	var out []render.ExternalSecret
	for _, n := range r.Nodes {
		out = append(out, n.ExternalSecrets...)
	}
	return out
}

// requeueAfter re-reads a status that is still settling.
const requeueAfter = 5 * time.Second
