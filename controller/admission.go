package controller

import (
	"context"
	"net"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/netguard"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/webhook"
)

// renderOptions are the options of every render of an object: the
// controller's, obeying policies, with EndpointSlice generation on.
func (c *Controller) renderOptions(policies map[string][]byte) render.Options {
	o := c.opts.Render(policies)
	o.EndpointSlices = true
	return o
}

// listenWebhooks opens the webhooks' listener when they are on, with
// their certificate from --webhook-cert-dir or, without it, from legate's
// PKI (startPKI).
func (c *Controller) listenWebhooks() error {
	if c.opts.WebhookAddr == "" || c.opts.WebhookAddr == "0" {
		return nil
	}
	lis, certs, err := webhook.Listen(c.opts.WebhookAddr, c.opts.WebhookCertDir, c.webhookTLS)
	if err != nil {
		return err
	}
	c.webhookLis, c.webhookTLS = netguard.Bound(lis, "the admission webhooks", c.log), certs
	return nil
}

// serveWebhooks serves the admission webhooks on lis until ctx ends.
func (c *Controller) serveWebhooks(ctx context.Context, lis net.Listener) error {
	admission := c.admission()
	if err := admission.Register(c.http.reg); err != nil {
		return err
	}
	return admission.Serve(ctx, lis, c.webhookTLS)
}

// WebhookAddr is where the admission webhooks listen ("" when off).
func (c *Controller) WebhookAddr() string {
	if c.webhookLis == nil {
		return ""
	}
	return c.webhookLis.Addr().String()
}

// admission is the webhook server of this controller: sidecar injection
// and the validation of legate's objects, behind the controller's
// tenancy, policies and EnvoySource drivers.
func (c *Controller) admission() *webhook.Server {
	objects := &webhook.Objects{
		MayConfigure:  func(ec *v1alpha1.EnvoyConfig) error { return c.mayConfigure(ecSource(ec), ec.Spec.NodeID) },
		Policies:      c.readPolicies,
		RenderOptions: c.renderOptions,
		SecretScope: func(ec *v1alpha1.EnvoyConfig, r *render.Result) []render.Diagnostic {
			return secretScope(ecSource(ec), r)
		},
		Source: c.envoySources.drivers.Check,
	}
	s := &webhook.Server{
		EnvoyConfigs: objects.ValidateEnvoyConfig,
		EnvoySources: objects.ValidateEnvoySource,
		// The webhooks serve from the start, and the API server may call
		// them before the caches they read are filled: a review waits for
		// them (at most its own deadline) rather than being refused.
		Ready: func(ctx context.Context) bool {
			return c.http.ready.Load() || c.mgr.GetCache().WaitForCacheSync(ctx)
		},
		Log: c.log.WithName("admission"),
	}
	if c.opts.Injector != nil {
		s.Mutator = c.opts.Injector
	}
	if c.issuer != nil {
		s.Issuer = c.issuer
	}
	return s
}
