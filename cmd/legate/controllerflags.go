package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/pki/kubepki"
	"github.com/legate-dev/legate/webhook"
)

// webhookFlags are legate controller's flags of admission, sidecar
// injection and its own PKI.
type webhookFlags struct {
	addr, certDir                          string
	image, xdsAddress, xdsServerName, mode string
	requests, limits                       map[string]string
	noInject, adminBeyondLoopback          bool

	caSecret, xdsSecret, webhookSecret string
	xdsHosts, webhookHosts             []string
	proxyValidity, serverValidity      time.Duration
}

func (f *webhookFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.addr, "webhook-addr", "0", `address of the admission webhooks over TLS: sidecar injection and validation of EnvoyConfigs and EnvoySources ("0": off; config/webhook registers them at :9443)`)
	fl.StringVar(&f.certDir, "webhook-cert-dir", "", "directory of the webhooks' serving certificate, tls.crt and tls.key (cert-manager's; read again when it changes); without it legate's PKI issues one (--pki-ca-secret)")
	fl.BoolVar(&f.noInject, "no-inject", false, "serve the validating webhooks only: Pods are not mutated")
	fl.BoolVar(&f.adminBeyondLoopback, "sidecar-allow-admin-beyond-loopback", false, "let a pod's admin.bind-address annotation put its sidecar's Envoy admin interface (which can dump the configuration and stop the proxy) on an address other pods reach; by default only loopback addresses are accepted")
	fl.StringVar(&f.image, "sidecar-image", webhook.DefaultImage, "Envoy image of injected sidecars (a Pod's envoy-image annotation wins)")
	fl.StringVar(&f.xdsAddress, "sidecar-xds-address", "", "host:port injected sidecars dial for xDS (default legate-xds.<controller namespace>.svc:18000)")
	fl.StringVar(&f.xdsServerName, "sidecar-xds-server-name", "", "name legate's xDS certificate must carry for the sidecars (default: the host of --sidecar-xds-address)")
	fl.StringVar(&f.mode, "sidecar-mode", webhook.ModeNative, "how sidecars are injected unless a Pod says: native (an init container that starts first and stops last) or classic (an extra container)")
	fl.StringToStringVar(&f.requests, "sidecar-requests", map[string]string{"cpu": "100m", "memory": "64Mi"}, "default resource requests of injected sidecars (cpu=…,memory=…); a Pod's annotations win")
	fl.StringToStringVar(&f.limits, "sidecar-limits", map[string]string{"memory": "256Mi"}, "default resource limits of injected sidecars")
	fl.StringVar(&f.caSecret, "pki-ca-secret", "", "run legate's own PKI with its CA in this Secret of --controller-namespace (created when absent): xDS over mutual TLS with a server certificate it issues, a client certificate per injected proxy's node ID, the webhooks' certificate; all renewed at two thirds of their lifetime")
	fl.StringVar(&f.xdsSecret, "pki-xds-secret", "legate-xds-tls", "Secret of --controller-namespace holding the xDS server certificate legate's PKI issues")
	fl.StringSliceVar(&f.xdsHosts, "pki-xds-hosts", nil, "names and addresses in the xDS server certificate (default legate-xds.<controller namespace>.svc and its cluster.local form)")
	fl.StringVar(&f.webhookSecret, "pki-webhook-secret", "legate-webhook-tls", "Secret of --controller-namespace holding the webhooks' serving certificate legate's PKI issues")
	fl.StringSliceVar(&f.webhookHosts, "pki-webhook-hosts", nil, "names in the webhooks' certificate (default legate-webhook.<controller namespace>.svc)")
	fl.DurationVar(&f.proxyValidity, "pki-proxy-validity", 0, "lifetime of proxies' client certificates (default 90 days; renewed at two thirds)")
	fl.DurationVar(&f.serverValidity, "pki-server-validity", 0, "lifetime of the xDS and webhook server certificates (default 90 days; renewed at two thirds)")
}

// apply completes opts with the flags, given the controller's namespace.
func (f *webhookFlags) apply(namespace string, opts *controller.Options) error {
	if f.caSecret != "" {
		opts.PKI = &kubepki.Options{
			CASecret: f.caSecret, XDSSecret: f.xdsSecret, XDSHosts: f.xdsHosts,
			WebhookSecret: f.webhookSecret, WebhookHosts: f.webhookHosts,
			ProxyValidity: f.proxyValidity, ServerValidity: f.serverValidity,
		}
		if len(opts.PKI.XDSHosts) == 0 {
			opts.PKI.XDSHosts = []string{"legate-xds." + namespace + ".svc", "legate-xds." + namespace + ".svc.cluster.local"}
		}
		if len(opts.PKI.WebhookHosts) == 0 {
			opts.PKI.WebhookHosts = []string{"legate-webhook." + namespace + ".svc"}
		}
	}
	if f.noInject || f.addr == "" || f.addr == "0" {
		return nil
	}
	in := webhook.Injector{Image: f.image, XDSAddress: f.xdsAddress, XDSServerName: f.xdsServerName, Mode: f.mode, AllowAdminBeyondLoopback: f.adminBeyondLoopback}
	if in.XDSAddress == "" {
		in.XDSAddress = "legate-xds." + namespace + ".svc:18000"
	}
	var err error
	if in.Resources.Requests, err = resourceList("--sidecar-requests", f.requests); err != nil {
		return err
	}
	if in.Resources.Limits, err = resourceList("--sidecar-limits", f.limits); err != nil {
		return err
	}
	if err := in.Check(); err != nil {
		return fmt.Errorf("sidecar injection: %w", err)
	}
	opts.Injector = in
	return nil
}

// resourceList reads cpu=…,memory=… of flag.
func resourceList(flag string, m map[string]string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for k, v := range m {
		name := corev1.ResourceName(strings.TrimSpace(k))
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			return nil, fmt.Errorf("%s: resource %q: want cpu or memory", flag, k)
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %s=%q is not a quantity (e.g. 100m, 128Mi)", flag, k, v)
		}
		out[name] = q
	}
	return out, nil
}

// newController is controller.New with opts completed by apply.
func newController(namespace string, opts controller.Options, apply func(string, *controller.Options) error) (*controller.Controller, error) {
	if namespace == "" {
		return nil, errors.New("--controller-namespace is empty")
	}
	if err := apply(namespace, &opts); err != nil {
		return nil, err
	}
	return controller.New(opts)
}
