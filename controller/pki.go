package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/legate-dev/legate/pki/kubepki"
	"github.com/legate-dev/legate/xds"
)

// The webhook configurations of config/webhook, whose caBundle legate's
// own PKI fills in.
const (
	InjectorWebhookConfiguration   = "legate-sidecar-injector"
	ValidationWebhookConfiguration = "legate-validation"
)

// What the controller needs of the API server for its PKI (config/rbac).
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create;update;patch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;list;watch;patch;update

// PKIOptions turn on legate's own certificate authority in the cluster:
// its CA in a Secret (created on first start unless one is given), the
// xDS server's certificate, each injected proxy's client certificate, and
// the admission webhooks' serving certificate, all renewed at two thirds
// of their lifetime without a restart.
type PKIOptions struct {
	// CASecret names the Secret of the controller's namespace holding the
	// CA (tls.crt, tls.key); it is created when absent. A CA of your own
	// (or cert-manager's) is a Secret created before the first start.
	CASecret string
	// XDSSecret names the Secret holding the xDS server's certificate
	// for XDSHosts (the names proxies dial, e.g.
	// legate-xds.legate-system.svc).
	XDSSecret string
	XDSHosts  []string
	// WebhookSecret names the Secret holding the webhooks' serving
	// certificate for WebhookHosts (legate-webhook.<namespace>.svc), used
	// when Options.WebhookCertDir is empty; the CA is then written into
	// the caBundle of the webhook configurations.
	WebhookSecret string
	WebhookHosts  []string
	// ProxyValidity and ServerValidity are the lifetimes of the
	// certificates issued (default pki.DefaultLeafValidity).
	ProxyValidity, ServerValidity time.Duration
}

// pkiStartTimeout bounds the reads and writes of the CA and server
// certificates at start.
const pkiStartTimeout = 30 * time.Second

// startPKI loads (or creates) the CA and the server certificates and
// registers their renewals with the manager. It returns the gRPC option
// of xDS over mutual TLS.
func (c *Controller) startPKI(direct client.Client) ([]grpc.ServerOption, error) {
	p := c.opts.PKI
	ns := c.opts.Namespace
	if p.CASecret == "" || p.XDSSecret == "" || len(p.XDSHosts) == 0 {
		return nil, errors.New("legate's PKI needs the CA's Secret, the xDS server certificate's Secret and its host names")
	}
	ctx, cancel := context.WithTimeout(context.Background(), pkiStartTimeout)
	defer cancel()
	ca, err := kubepki.LoadOrCreateCA(ctx, direct, types.NamespacedName{Namespace: ns, Name: p.CASecret}, time.Now())
	if err != nil {
		return nil, err
	}
	log := c.log.WithName("pki")
	server := &kubepki.ServerCertificate{
		Client: direct, CA: ca, Secret: types.NamespacedName{Namespace: ns, Name: p.XDSSecret},
		Hosts: p.XDSHosts, Validity: p.ServerValidity, Log: log,
	}
	if _, err := server.Ensure(ctx); err != nil {
		return nil, fmt.Errorf("the xDS server certificate: %w", err)
	}
	authority := &kubepki.Authority{
		CA: ca, Client: direct, Validity: p.ProxyValidity, Namespace: c.opts.WatchNamespace, Log: log,
	}
	c.issuer = &proxyIssuer{c: c, authority: authority}
	if err := c.indexNodes(); err != nil {
		return nil, err
	}
	if err := c.watchInjectedPods(true); err != nil {
		return nil, err
	}
	for _, r := range []manager.Runnable{server, authority} {
		if err := c.mgr.Add(r); err != nil {
			return nil, err
		}
	}
	if c.opts.WebhookAddr != "" && c.opts.WebhookAddr != "0" && c.opts.WebhookCertDir == "" {
		if p.WebhookSecret == "" || len(p.WebhookHosts) == 0 {
			return nil, errors.New("the admission webhooks need --webhook-cert-dir, or legate's PKI with the webhook certificate's Secret and host names")
		}
		webhookCert := &kubepki.ServerCertificate{
			Client: direct, CA: ca, Secret: types.NamespacedName{Namespace: ns, Name: p.WebhookSecret},
			Hosts: p.WebhookHosts, Validity: p.ServerValidity, Log: log,
		}
		if _, err := webhookCert.Ensure(ctx); err != nil {
			return nil, fmt.Errorf("the webhooks' serving certificate: %w", err)
		}
		if err := c.mgr.Add(webhookCert); err != nil {
			return nil, err
		}
		c.webhookTLS = webhookCert
		bundle := caBundle{client: direct, ca: ca.CertPEM(), log: c.log}
		if err := c.mgr.Add(manager.RunnableFunc(bundle.run)); err != nil {
			return nil, err
		}
	}
	return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(xds.ServerTLS(server)))}, nil
}

// caBundle writes legate's CA into the caBundle of its webhook
// configurations, so that the API server trusts the serving certificate
// legate issues itself (what cert-manager's CA injector does otherwise).
type caBundle struct {
	client client.Client
	ca     []byte
	log    logr.Logger
}

// caBundleInterval is how often the configurations are checked again (an
// apply of config/webhook resets their caBundle).
const caBundleInterval = time.Minute

func (b caBundle) run(ctx context.Context) error {
	t := time.NewTicker(caBundleInterval)
	defer t.Stop()
	for {
		if err := b.write(ctx); err != nil && ctx.Err() == nil {
			b.log.Error(err, "writing legate's CA into the webhook configurations")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// write sets the caBundle of every webhook of legate's configurations that
// lacks the CA; a configuration not installed yet is skipped.
func (b caBundle) write(ctx context.Context) error {
	var errs []error
	for _, obj := range []client.Object{&admissionregv1.MutatingWebhookConfiguration{}, &admissionregv1.ValidatingWebhookConfiguration{}} {
		name := ValidationWebhookConfiguration
		if _, ok := obj.(*admissionregv1.MutatingWebhookConfiguration); ok {
			name = InjectorWebhookConfiguration
		}
		if err := b.client.Get(ctx, types.NamespacedName{Name: name}, obj); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		base := obj.DeepCopyObject().(client.Object)
		changed := false
		for _, cc := range clientConfigs(obj) {
			if !bytes.Equal(cc.CABundle, b.ca) {
				cc.CABundle, changed = b.ca, true
			}
		}
		if !changed {
			continue
		}
		if err := b.client.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		b.log.Info("wrote legate's CA into the caBundle", "configuration", name)
	}
	return errors.Join(errs...)
}

// clientConfigs are the client configurations of a webhook
// configuration's webhooks.
func clientConfigs(obj client.Object) []*admissionregv1.WebhookClientConfig {
	var out []*admissionregv1.WebhookClientConfig
	switch o := obj.(type) {
	case *admissionregv1.MutatingWebhookConfiguration:
		for i := range o.Webhooks {
			out = append(out, &o.Webhooks[i].ClientConfig)
		}
	case *admissionregv1.ValidatingWebhookConfiguration:
		for i := range o.Webhooks {
			out = append(out, &o.Webhooks[i].ClientConfig)
		}
	}
	return out
}
