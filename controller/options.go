package controller

import (
	"net/netip"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"

	"github.com/legate-dev/legate/core"
	"github.com/legate-dev/legate/pki/kubepki"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/sources/envoysource"
	"github.com/legate-dev/legate/tenancy"
	"github.com/legate-dev/legate/webhook"
)

// DefaultXDSAddr is where the ADS server listens unless told otherwise.
const DefaultXDSAddr = "127.0.0.1:18000"

// Options configure a Controller.
type Options struct {
	Config *rest.Config
	// Namespace keeps the revisions and node records (the controller's
	// own namespace).
	Namespace string
	// WatchNamespace limits the EnvoyConfig objects reconciled to one
	// namespace; "" watches every namespace.
	WatchNamespace string
	// XDSAddr is where the ADS server listens (loopback by default).
	XDSAddr string
	// HTTPAddr is where the read-only status API, status page and
	// /metrics listen (DefaultHTTPAddr by default; "0" turns them off).
	HTTPAddr string
	// HTTPAllowedHosts are the names besides localhost, HTTPAddr's and
	// PublicURL's host that requests to HTTPAddr may carry in their Host
	// header (any IP address may): others are refused, against DNS
	// rebinding.
	HTTPAllowedHosts []string
	// ProbeAddr is where /healthz and /readyz answer the kubelet alone
	// (no data; "" or "0": off).
	ProbeAddr string
	// PublicURL is where people reach the status API; commit statuses
	// link to <PublicURL>/api/v1/nodes/<node> when it is set.
	PublicURL string
	// StateDir keeps the clones of the Git repositories EnvoySources
	// follow (a cache: an empty one is filled again); default
	// $TMPDIR/legate-controller.
	StateDir string
	// Render returns the renderer options of one render (shared with
	// legate validate) that obeys policies (path → CUE source) besides
	// the rendered tree's own; nil renders with the defaults.
	Render func(policies map[string][]byte) render.Options
	// XDSTLSCert and XDSTLSKey are the xDS server's certificate chain and
	// key (PEM files, read again when they change, so a renewed
	// certificate is served without a restart); with them xDS runs over
	// TLS.
	XDSTLSCert, XDSTLSKey string
	// XDSClientCA holds the CA certificates (PEM) that sign the proxies'
	// client certificates: with it xDS runs over mutual TLS, a stream
	// without a certificate is refused, and a certificate may fetch only
	// the node IDs it names (xds.CertificateBinding). xDS beyond loopback
	// requires it (or legate's PKI), unless Tuning.XDSInsecure.
	XDSClientCA string
	// XDSInsecureSecrets names the secrets whose key material is served
	// although xDS runs without mutual TLS ("*": all); by default none is.
	XDSInsecureSecrets []string
	// Fetch bounds the fetches of the EnvoySources: workers, each
	// namespace's share of them, the per-fetch timeout and the memory
	// their files may take (zero values are the defaults).
	Fetch envoysource.Limits
	// FetchAllowNetworks are the networks EnvoySources (Git, OCI), the
	// Flux artifacts they read and commit statuses may reach although
	// they are not public. By default none: loopback, link-local (cloud
	// metadata), private and cluster-internal addresses are refused at
	// dial time (netguard), except that Flux artifacts may come from
	// private and cluster-internal ones (source-controller's Service).
	FetchAllowNetworks []netip.Prefix
	// PolicyDir holds CUE policies (*.cue) every configuration obeys,
	// besides those of ConfigMaps labelled PolicyLabel.
	PolicyDir string
	// LeaderElect runs the controller as one of several replicas: every
	// replica serves xDS, the holder of the Lease LeaseName (in
	// Namespace) decides and writes (see revisions/kubereplicas).
	LeaderElect bool
	// Replica names this replica in the Lease, the answers it sends the
	// leader and the status API (default: the host name, in a pod its
	// name).
	Replica string
	// LeaseDuration, RenewDeadline and RetryPeriod time the election
	// (default 15 s, 10 s, 2 s, as Kubernetes' own controllers).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// AnswersInterval bounds how often a follower writes its proxies'
	// answers for the leader (default 250 ms).
	AnswersInterval time.Duration
	// WebhookAddr is where the admission webhooks listen over TLS (""
	// or "0": off); the API server calls them (config/webhook).
	WebhookAddr string
	// WebhookCertDir holds the webhooks' serving certificate, tls.crt
	// and tls.key (read again when they change).
	WebhookCertDir string
	// PKI turns on legate's own certificate authority (see kubepki.Options):
	// xDS then runs over mutual TLS with the certificates it issues.
	PKI *kubepki.Options
	// NodeIDPolicy decides which node IDs nobody owns yet a namespace may
	// take (default tenancy.NodeIDsFirstCome).
	NodeIDPolicy tenancy.NodeIDPolicy
	// Injector injects Envoy sidecars into the Pods that ask for one
	// (webhook.Injector); nil: Pods are not mutated.
	Injector webhook.PodMutator
	// Tuning holds the knobs both homes share: history, taint threshold,
	// answer timeout, commit-status backoff, the xDS exposure opt-in and
	// the log format (core.Tuning; zero values are the defaults).
	Tuning core.Tuning
	Log    logr.Logger
}
