package controller

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/pipeline"
	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/render"
	kubesrc "github.com/legate-dev/legate/sources/kube"
	"github.com/legate-dev/legate/webhook"
)

// admissionRenderLimit bounds one render at admission: the API server
// waits for the webhook at most its timeoutSeconds (config/webhook: 15 s).
const admissionRenderLimit = 10 * time.Second

// admissionRenders bounds the renders that run at once at admission, so
// that a burst of applies cannot starve the reconcilers nor add more than
// two renders' budgets to the controller's memory: a slot is held until
// its render has stopped, not only until admission answers.
const admissionRenders = 2

// maxAdmissionDiagnostics is how many errors a refusal lists.
const maxAdmissionDiagnostics = 10

// renderOptions are the options of every render of an object: the
// controller's, obeying policies, with EndpointSlice generation on.
func (c *Controller) renderOptions(policies map[string][]byte) render.Options {
	o := c.opts.Render(policies)
	o.EndpointSlices = true
	return o
}

// validateEnvoyConfig renders an EnvoyConfig under admission as its
// reconcile would (schema, policies in force, references, the namespace's
// secret scope) and refuses it with the renderer's diagnostics.
func (c *Controller) validateEnvoyConfig(ctx context.Context, req *admissionv1.AdmissionRequest) error {
	var ec v1alpha1.EnvoyConfig
	if err := decodeAdmitted(req, &ec); err != nil {
		return err
	}
	if err := c.mayConfigure(ecSource(&ec), ec.Spec.NodeID); err != nil {
		return fmt.Errorf("EnvoyConfig %s/%s: spec.nodeID: %w", ec.Namespace, ec.Name, err)
	}
	tree, _, err := kubesrc.Tree(&ec)
	if err != nil {
		return err
	}
	policies, err := c.readPolicies(ctx)
	if err != nil {
		return fmt.Errorf("read the policies in force: %w", err)
	}
	opts := c.renderOptions(policies)
	res, err := renderInSlot(ctx, c.admitting, func(ctx context.Context) (*render.Result, <-chan struct{}) {
		return pipeline.RenderWithin(ctx, tree, opts, admissionRenderLimit)
	})
	if err != nil {
		return err
	}
	source := ecSource(&ec)
	if res.OK() {
		res.Diagnostics = secretScope(source, res)
	}
	if res.OK() {
		return nil
	}
	return refusal(fmt.Sprintf("EnvoyConfig %s/%s", ec.Namespace, ec.Name), res.Diagnostics)
}

// renderInSlot runs one admission render in a slot of slots, waiting for
// one until ctx ends. The slot is freed when the render has stopped (its
// stopped channel closes), which may be after renderInSlot returns: a
// render answered at its limit runs on to its next check, and a CUE
// generator to its end, and until then it still holds its memory.
func renderInSlot(ctx context.Context, slots chan struct{}, run func(context.Context) (*render.Result, <-chan struct{})) (*render.Result, error) {
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return nil, errors.New("legate is busy validating other objects; apply again")
	}
	res, stopped := run(ctx)
	go func() {
		<-stopped
		<-slots
	}()
	return res, nil
}

// validateEnvoySource checks an EnvoySource's spec as its reconcile
// builds a driver from it (without reading its Secret or the network).
func (c *Controller) validateEnvoySource(_ context.Context, req *admissionv1.AdmissionRequest) error {
	var es v1alpha1.EnvoySource
	if err := decodeAdmitted(req, &es); err != nil {
		return err
	}
	return c.checkEnvoySource(&es)
}

// decodeAdmitted decodes the object under admission into obj, named as the
// request names it (a generateName object has no name yet; the namespace
// may come from the request alone).
func decodeAdmitted(req *admissionv1.AdmissionRequest, obj client.Object) error {
	if err := json.Unmarshal(req.Object.Raw, obj); err != nil {
		return fmt.Errorf("decode the %s: %w", req.Kind.Kind, err)
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(req.Namespace)
	}
	if obj.GetName() == "" {
		obj.SetName(req.Name)
	}
	return nil
}

// refusal lists the first diagnostics of a refused object, one a line.
func refusal(what string, diags []render.Diagnostic) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s is refused by validation (%d error(s)):", what, len(diags))
	for _, d := range diags[:min(len(diags), maxAdmissionDiagnostics)] {
		b.WriteString("\n  ")
		b.WriteString(d.String())
	}
	if len(diags) > maxAdmissionDiagnostics {
		fmt.Fprintf(&b, "\n  … and %d more (legate validate prints them all)", len(diags)-maxAdmissionDiagnostics)
	}
	return errors.New(b.String())
}

// serveWebhooks serves the admission webhooks over TLS on lis until ctx
// ends. Each handshake takes the current certificate (files read again
// when they change, or legate's PKI's renewal), so no restart is needed.
func (c *Controller) serveWebhooks(ctx context.Context, lis net.Listener) error {
	admission := c.admission()
	if err := admission.Register(c.http.reg); err != nil {
		return err
	}
	certs := c.webhookTLS
	srv := &http.Server{
		Handler:           admission.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		MaxHeaderBytes:    64 << 10,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			cert, _, err := certs.Current()
			return cert, err
		}},
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.ServeTLS(lis, "", ""); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// listenWebhooks opens the webhooks' listener when they are on, with
// their certificate from --webhook-cert-dir or, without it, from legate's
// PKI (startPKI).
func (c *Controller) listenWebhooks() error {
	c.admitting = make(chan struct{}, admissionRenders)
	if c.opts.WebhookAddr == "" || c.opts.WebhookAddr == "0" {
		return nil
	}
	if c.opts.WebhookCertDir != "" {
		// Fail at start, not at the first call, on a missing certificate.
		certs, err := pki.LoadKeyPairFiles(filepath.Join(c.opts.WebhookCertDir, "tls.crt"), filepath.Join(c.opts.WebhookCertDir, "tls.key"), "")
		if err != nil {
			return fmt.Errorf("--webhook-cert-dir: %w", err)
		}
		c.webhookTLS = certs
	}
	if c.webhookTLS == nil {
		return errors.New("the admission webhooks need --webhook-cert-dir or legate's PKI: the API server calls them over TLS only")
	}
	lis, err := net.Listen("tcp", c.opts.WebhookAddr)
	if err != nil {
		return fmt.Errorf("listen for the admission webhooks on %s: %w", c.opts.WebhookAddr, err)
	}
	c.webhookLis = lis
	return nil
}

// WebhookAddr is where the admission webhooks listen ("" when off).
func (c *Controller) WebhookAddr() string {
	if c.webhookLis == nil {
		return ""
	}
	return c.webhookLis.Addr().String()
}

// admission is the webhook server of this controller: sidecar injection
// and the validation of legate's objects.
func (c *Controller) admission() *webhook.Server {
	s := &webhook.Server{
		EnvoyConfigs: c.validateEnvoyConfig,
		EnvoySources: c.validateEnvoySource,
		Log:          c.log.WithName("admission"),
	}
	if c.opts.Injector != nil {
		s.Mutator = c.opts.Injector
	}
	if c.issuer != nil {
		s.Issuer = c.issuer
	}
	return s
}
