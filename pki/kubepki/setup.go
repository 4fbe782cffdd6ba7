package kubepki

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Options turn on legate's own certificate authority in the cluster: its
// CA in a Secret (created on first start unless one is given), the xDS
// server's certificate, each injected proxy's client certificate, and the
// admission webhooks' serving certificate, all renewed at two thirds of
// their lifetime without a restart.
type Options struct {
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
	// when the home serves its webhooks without a certificate of its own;
	// the CA is then written into the caBundle of the webhook
	// configurations (CABundle).
	WebhookSecret string
	WebhookHosts  []string
	// ProxyValidity and ServerValidity are the lifetimes of the
	// certificates issued (default pki.DefaultLeafValidity).
	ProxyValidity, ServerValidity time.Duration
}

// Home is what the Kubernetes home gives its PKI: where to run, and its
// tenancy decision. Nothing here points back at the home.
type Home struct {
	Manager manager.Manager
	// Client reads and writes Secrets and webhook configurations; it
	// reads from the API server (see the package comment).
	Client client.Client
	// Namespace holds the CA's and the servers' Secrets; WatchNamespace,
	// when set, is the only one whose proxies' certificates are renewed.
	Namespace, WatchNamespace string
	// Webhooks asks for the webhooks' serving certificate and the
	// caBundle writer.
	Webhooks bool
	// MayServe, Watches and Recorder are the injected pods' reconciler's
	// (ProxyCertificates).
	MayServe MayServe
	Watches  func(namespace string) bool
	Recorder events.EventRecorder
	Log      logr.Logger
	// SkipNameValidation is controller-runtime's, for several homes in
	// one process (tests).
	SkipNameValidation bool
}

// PKI is what Start set up.
type PKI struct {
	// XDS is the xDS server's certificate.
	XDS *ServerCertificate
	// Webhooks is the webhooks' serving certificate; nil unless
	// Home.Webhooks.
	Webhooks *ServerCertificate
	// Issuer issues proxies' certificates behind the tenancy decision
	// (the admission webhook's webhook.ProxyIssuer).
	Issuer Issuer
}

// startTimeout bounds the reads and writes of the CA and server
// certificates at start.
const startTimeout = 30 * time.Second

// Start loads (or creates) the CA and the server certificates, and
// registers with the manager their renewals, the proxies' renewals, the
// injected pods' reconciler and, with webhooks, the caBundle writer.
func Start(o Options, h Home) (*PKI, error) {
	if o.CASecret == "" || o.XDSSecret == "" || len(o.XDSHosts) == 0 {
		return nil, errors.New("legate's PKI needs the CA's Secret, the xDS server certificate's Secret and its host names")
	}
	if h.Webhooks && (o.WebhookSecret == "" || len(o.WebhookHosts) == 0) {
		return nil, errors.New("the admission webhooks need --webhook-cert-dir, or legate's PKI with the webhook certificate's Secret and host names")
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	ca, err := LoadOrCreateCA(ctx, h.Client, types.NamespacedName{Namespace: h.Namespace, Name: o.CASecret}, time.Now())
	if err != nil {
		return nil, err
	}
	log := h.Log.WithName("pki")
	server := func(secret string, hosts []string) *ServerCertificate {
		return &ServerCertificate{
			Client: h.Client, CA: ca, Secret: types.NamespacedName{Namespace: h.Namespace, Name: secret},
			Hosts: hosts, Validity: o.ServerValidity, Log: log,
		}
	}
	p := &PKI{XDS: server(o.XDSSecret, o.XDSHosts)}
	if _, err := p.XDS.Ensure(ctx); err != nil {
		return nil, fmt.Errorf("the xDS server certificate: %w", err)
	}
	authority := &Authority{CA: ca, Client: h.Client, Validity: o.ProxyValidity, Namespace: h.WatchNamespace, Log: log}
	p.Issuer = Issuer{Authority: authority, MayServe: h.MayServe}
	pods := &ProxyCertificates{Issuer: p.Issuer, Pods: h.Manager.GetClient(), Watches: h.Watches, Recorder: h.Recorder}
	if err := pods.SetupWithManager(h.Manager, h.SkipNameValidation); err != nil {
		return nil, fmt.Errorf("proxy certificate reconciler: %w", err)
	}
	runnables := []manager.Runnable{p.XDS, authority}
	if h.Webhooks {
		p.Webhooks = server(o.WebhookSecret, o.WebhookHosts)
		if _, err := p.Webhooks.Ensure(ctx); err != nil {
			return nil, fmt.Errorf("the webhooks' serving certificate: %w", err)
		}
		runnables = append(runnables, p.Webhooks, CABundle{Client: h.Client, CA: ca.CertPEM(), Log: h.Log})
	}
	for _, r := range runnables {
		if err := h.Manager.Add(r); err != nil {
			return nil, err
		}
	}
	return p, nil
}
