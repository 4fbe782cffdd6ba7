package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/core"
	"github.com/legate-dev/legate/netguard"
	"github.com/legate-dev/legate/revisions/kubereplicas"
	"github.com/legate-dev/legate/revisions/kubestore"
	"github.com/legate-dev/legate/tenancy"
)

// restConfig reads kubeconfig when it is set, else finds the cluster as
// kubectl does.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return ctrl.GetConfig()
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

func newControllerCommand() *cobra.Command {
	var insecureSecrets, fetchAllow, httpHosts []string
	var namespace, watchNamespace, xdsAddr, httpAddr, probeAddr, stateDir, kubeconfig, policyDir string
	var tlsCert, tlsKey, clientCA, replica, nodeIDPolicy string
	var leaderElect bool
	var tuning core.Tuning
	var hooks webhookFlags
	var fetches fetchFlags
	var leaseDuration, renewDeadline, retryPeriod time.Duration
	cmd := &cobra.Command{
		Use: "controller",
		Example: `  # with the CRDs installed (kubectl apply -f config/crd/), as the current kubectl context
  legate controller
  # only the EnvoyConfig and EnvoySource objects of one namespace
  legate controller --namespace team-a
  # outside a cluster, against a given API server
  legate controller --kubeconfig ~/.kube/config --xds-addr 127.0.0.1:18000 --http-addr 127.0.0.1:8080`,
		Short: "Run the Kubernetes home: EnvoyConfig and EnvoySource objects served over xDS, revisions in the API server",
		Long: `controller reconciles the EnvoyConfig and EnvoySource objects of the
cluster (or of --namespace) through the same renderer, revision engine
and xDS server as legate serve. An EnvoySource follows a Git repository, an
OCI artifact or a Flux GitRepository/OCIRepository (its artifact verified
against its digest). Revisions are EnvoyConfigRevision objects and node
records ConfigMaps in --controller-namespace; each object's status says whether it is
served (cacheState, publishedVersion, desiredVersion, conditions) and, when
proxies reject it, their own text. Install the CRDs first:
kubectl apply -f config/crd/. It reads the cluster configuration from
--kubeconfig, else as kubectl does (KUBECONFIG, or the pod's service account
in a cluster).

--http-addr serves a read-only status page, /api/v1/nodes, /api/v1/sources
and /metrics (loopback by default); --probe-addr answers only /healthz and
/readyz, for the kubelet.

xDS listens on loopback unless it runs over mutual TLS: --xds-tls-cert,
--xds-tls-key and --xds-client-ca (legate pki init makes them), or
--pki-ca-secret; then each proxy's client certificate names the node IDs it
may fetch. --xds-insecure accepts the risk of doing without, as in legate
serve. The knobs both homes share (--history, --taint-threshold,
--answer-timeout, --status-max-backoff, --xds-insecure, --log-format,
--log-level) are described in docs/tuning.md.

With --leader-elect, several replicas share the API server: every one serves
xDS (what the store says is published, under the leader's versions), the
holder of the Lease decides, writes revisions and statuses, and counts the
answers of every replica's proxies (docs/kubernetes.md, "Several replicas").`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := tuning.Validate(); err != nil {
				return err
			}
			log, err := tuning.Logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return err
			}
			policy, err := tenancy.ParseNodeIDPolicy(nodeIDPolicy)
			if err != nil {
				return fmt.Errorf("--node-id-policy: %w", err)
			}
			fetchNetworks, err := netguard.ParseNetworks(fetchAllow)
			if err != nil {
				return fmt.Errorf("--fetch-allow-networks: %w", err)
			}
			if err := kubestore.CheckNamespace(cmd.Context(), cfg, namespace); err != nil {
				return err
			}
			ctl, err := newController(namespace, controller.Options{
				Config: cfg, Namespace: namespace, WatchNamespace: watchNamespace, XDSAddr: xdsAddr,
				HTTPAddr: httpAddr, HTTPAllowedHosts: httpHosts, ProbeAddr: probeAddr, StateDir: stateDir, PolicyDir: policyDir,
				XDSInsecureSecrets: insecureSecrets, XDSTLSCert: tlsCert, XDSTLSKey: tlsKey, XDSClientCA: clientCA,
				LeaderElect: leaderElect, Replica: replica, NodeIDPolicy: policy,
				LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
				Render: newPolicyRenderOptions(), Tuning: tuning, Log: log,
				WebhookAddr: hooks.addr, WebhookCertDir: hooks.certDir, FetchAllowNetworks: fetchNetworks,
			}, func(ns string, o *controller.Options) error { fetches.apply(o); return hooks.apply(ns, o) })
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			log.Info("serving", "xds", ctl.XDSAddr(), "http", ctl.HTTPAddr(), "namespace", namespace, "watchNamespace", watchNamespace)
			return ctl.Run(ctx)
		},
	}
	fl := cmd.Flags()
	defaultNS := defaultControllerNamespace()
	fl.StringVar(&nodeIDPolicy, "node-id-policy", string(tenancy.NodeIDsFirstCome), "which node IDs nobody owns yet a namespace may take: first-come (the first namespace to configure one owns it) or namespace-prefix (only IDs that begin with the namespace and a dot, such as team-a.edge)")
	fl.StringVar(&watchNamespace, "namespace", os.Getenv("LEGATE_WATCH_NAMESPACE"), "reconcile the EnvoyConfigs and EnvoySources of this namespace only (default: $LEGATE_WATCH_NAMESPACE, else every namespace)")
	fl.StringVar(&namespace, "controller-namespace", defaultNS, "namespace of the revisions, node records, commit-status outbox and policy ConfigMaps (default: $POD_NAMESPACE, else legate-system)")
	fl.StringVar(&xdsAddr, "xds-addr", controller.DefaultXDSAddr, "address of the xDS (ADS) server; beyond loopback only over mutual TLS")
	fl.StringVar(&tlsCert, "xds-tls-cert", "", "serve xDS over TLS with this certificate chain (PEM; reloaded when it changes)")
	fl.StringVar(&tlsKey, "xds-tls-key", "", "the private key of --xds-tls-cert (PEM)")
	fl.StringVar(&clientCA, "xds-client-ca", "", "require client certificates signed by this CA (PEM) and let each fetch only the node IDs it names (DNS name, URI or common name)")
	fl.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file of the cluster (default: $KUBECONFIG, ~/.kube/config, else the in-cluster service account)")
	fl.StringVar(&httpAddr, "http-addr", controller.DefaultHTTPAddr, `address of the read-only status page, JSON API and /metrics ("0": off)`)
	fl.StringSliceVar(&httpHosts, "http-allowed-hosts", nil, "names the status API may be called by (its Host header) besides localhost and --http-addr's host, e.g. the Service's legate.legate-system.svc; any IP address may (a name not listed is refused, against DNS rebinding)")
	fl.StringVar(&probeAddr, "probe-addr", "0", `address of /healthz and /readyz for the kubelet, nothing else ("0": off)`)
	fl.StringVar(&stateDir, "state-dir", "", "directory of the Git clones EnvoySources follow, a cache (default: $TMPDIR/legate-controller)")
	fl.StringSliceVar(&insecureSecrets, "xds-insecure-secrets", nil, `secrets (by their SDS name; "*": all) whose key material is served over plaintext xDS; by default none is, and a revision that needs one waits`)
	fl.StringSliceVar(&fetchAllow, "fetch-allow-networks", nil, "networks (CIDRs or addresses) that EnvoySources' Git and OCI URLs, Flux artifacts and commit statuses may reach although not public, e.g. an in-cluster Gitea's 10.96.0.0/12; by default loopback, link-local (cloud metadata), private and cluster-internal addresses are refused at dial time (Flux artifacts may come from private ones, source-controller's Service)")
	fl.StringVar(&policyDir, "policy-dir", "", "directory of CUE policies (*.cue) every configuration obeys, besides the ConfigMaps of --controller-namespace labelled "+controller.PolicyLabel)
	fl.BoolVar(&leaderElect, "leader-elect", false, "run as one of several replicas: every replica serves xDS, the holder of the Lease "+kubereplicas.LeaseName+" in --controller-namespace decides and writes")
	fl.DurationVar(&leaseDuration, "lease-duration", 15*time.Second, "how long a leader's Lease holds without renewal: after a leader dies, the others wait this long")
	fl.DurationVar(&renewDeadline, "renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it steps down")
	fl.DurationVar(&retryPeriod, "retry-period", 2*time.Second, "how often replicas try to take or renew the Lease")
	fl.StringVar(&replica, "replica", os.Getenv("POD_NAME"), "this replica's name in the Lease and the status API (default: $POD_NAME, else the host name)")
	hooks.register(fl)
	fetches.register(fl)
	tuning.AddFlags(fl)
	return cmd
}
