package controller

import (
	"context"
	"crypto/tls"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/pki/kubepki"
	"github.com/legate-dev/legate/tenancy/kubetenancy"
	"github.com/legate-dev/legate/xds"
)

// What the controller needs of the API server for its PKI (config/rbac)
// and for the injected proxies (pki/kubepki.ProxyCertificates).
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create;update;patch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// startPKI starts legate's PKI (pki/kubepki) behind the controller's
// tenancy decision (kubetenancy.Checker.MayServe). It returns the TLS
// configuration of xDS over mutual TLS.
func (c *Controller) startPKI(direct client.Client) (*tls.Config, error) {
	if err := kubetenancy.IndexNodes(context.Background(), c.mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	p, err := kubepki.Start(*c.opts.PKI, kubepki.Home{
		Manager: c.mgr, Client: direct, Namespace: c.opts.Namespace, WatchNamespace: c.opts.WatchNamespace,
		Webhooks: c.opts.WebhookAddr != "" && c.opts.WebhookAddr != "0" && c.opts.WebhookCertDir == "",
		MayServe: c.tenancy.MayServe, Watches: func(ns string) bool { return watching(c.opts.WatchNamespace, ns) }, Recorder: c.recorder, Log: c.log, SkipNameValidation: true,
	})
	if err != nil {
		return nil, err
	}
	c.issuer = &p.Issuer
	if p.Webhooks != nil {
		c.webhookTLS = p.Webhooks
	}
	return xds.ServerTLS(p.XDS), nil
}
