package main

import (
	"errors"
	"time"

	"github.com/spf13/pflag"

	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/pki/kubepki"
)

// webhookFlags are legate controller's flags of admission, sidecar
// injection and its own PKI.
type webhookFlags struct {
	addr, certDir string
	sidecar       sidecarFlags
	noInject      bool

	caSecret, xdsSecret, webhookSecret string
	xdsHosts, webhookHosts             []string
	proxyValidity, serverValidity      time.Duration
}

func (f *webhookFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.addr, "webhook-addr", "0", `address of the admission webhooks over TLS: sidecar injection and validation of EnvoyConfigs and EnvoySources ("0": off; config/webhook registers them at :9443)`)
	fl.StringVar(&f.certDir, "webhook-cert-dir", "", "directory of the webhooks' serving certificate, tls.crt and tls.key (cert-manager's; read again when it changes); without it legate's PKI issues one (--pki-ca-secret)")
	fl.BoolVar(&f.noInject, "no-inject", false, "serve the validating webhooks only: Pods are not mutated")
	f.sidecar.register(fl)
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
	in, err := f.sidecar.injector(namespace)
	if err != nil {
		return err
	}
	opts.Injector = in
	return nil
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
