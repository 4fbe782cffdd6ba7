package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/pipeline"
	"github.com/legate-dev/legate/render"
	kubesrc "github.com/legate-dev/legate/sources/kube"
)

// admissionRenderLimit bounds one render at admission: the API server
// waits for the webhook at most its timeoutSeconds (config/webhook: 15 s).
const admissionRenderLimit = 10 * time.Second

// admissionRenders bounds the renders that run at once at admission, so
// that a burst of applies cannot starve the reconcilers nor add more than
// two renders' budgets to the controller's memory: a slot is held until
// its render has stopped, not only until admission answers.
const admissionRenders = 2

// admissionRendersPerPeer bounds those of one client (see renderSlots):
// one client cannot take the last slot. The API server's own reviews
// from one address render one at a time (in milliseconds, most of them).
const admissionRendersPerPeer = admissionRenders - 1

// maxAdmissionDiagnostics is how many errors a refusal lists.
const maxAdmissionDiagnostics = 10

// Objects validates legate's own objects at admission as the home's
// reconcile would take them; its two methods are Server's EnvoyConfigs
// and EnvoySources validators. The home's decisions come in as functions,
// each called concurrently: Objects holds no pointer to the home. Its only
// state is the slots of the renders running.
type Objects struct {
	// MayConfigure is the home's tenancy decision: whether ec's namespace
	// may configure its spec.nodeID. Its error must name nothing of
	// another namespace (admission answers reach whoever applies).
	MayConfigure func(ec *v1alpha1.EnvoyConfig) error
	// Policies reads the policies in force.
	Policies func(ctx context.Context) (map[string][]byte, error)
	// RenderOptions are the options of a render obeying policies.
	RenderOptions func(policies map[string][]byte) render.Options
	// SecretScope checks the Secrets the rendered configuration of ec
	// refers to (its namespace's only) and returns the diagnostics.
	SecretScope func(ec *v1alpha1.EnvoyConfig, r *render.Result) []render.Diagnostic
	// Source checks an EnvoySource's spec as its reconcile builds a
	// driver from it, without reading its Secret or the network.
	Source func(es *v1alpha1.EnvoySource) error

	once  sync.Once
	slots *renderSlots // admission renders running
}

// ValidateEnvoyConfig renders an EnvoyConfig under admission as its
// reconcile would (schema, policies in force, references, the namespace's
// secret scope) and refuses it with the renderer's diagnostics.
func (o *Objects) ValidateEnvoyConfig(ctx context.Context, req *admissionv1.AdmissionRequest) error {
	var ec v1alpha1.EnvoyConfig
	if err := decodeAdmitted(req, &ec); err != nil {
		return err
	}
	if err := o.MayConfigure(&ec); err != nil {
		return fmt.Errorf("EnvoyConfig %s/%s: spec.nodeID: %w", ec.Namespace, ec.Name, err)
	}
	tree, _, err := kubesrc.Tree(&ec)
	if err != nil {
		return err
	}
	policies, err := o.Policies(ctx)
	if err != nil {
		return fmt.Errorf("read the policies in force: %w", err)
	}
	opts := o.RenderOptions(policies)
	o.once.Do(func() { o.slots = newRenderSlots(admissionRenders, admissionRendersPerPeer) })
	res, err := renderInSlot(ctx, o.slots, peerOf(ctx), func(ctx context.Context) (*render.Result, <-chan struct{}) {
		return pipeline.RenderWithin(ctx, tree, opts, admissionRenderLimit)
	})
	if err != nil {
		return err
	}
	if res.OK() {
		res.Diagnostics = o.SecretScope(&ec, res)
	}
	if res.OK() {
		return nil
	}
	return refusal(fmt.Sprintf("EnvoyConfig %s/%s", ec.Namespace, ec.Name), pipeline.InObject("EnvoyConfig", tree, res.Diagnostics))
}

// ValidateEnvoySource checks an EnvoySource's spec (Source).
func (o *Objects) ValidateEnvoySource(_ context.Context, req *admissionv1.AdmissionRequest) error {
	var es v1alpha1.EnvoySource
	if err := decodeAdmitted(req, &es); err != nil {
		return err
	}
	return o.Source(&es)
}

// renderInSlot runs one admission render for peer in a slot of slots,
// waiting for one until ctx (the review's deadline) ends; the render
// stops at that deadline too. The slot is freed when the render has
// stopped (its stopped channel closes), which may be after renderInSlot
// returns: a render answered at its limit runs on to its next check, and
// a CUE generator to its end, and until then it still holds its memory.
func renderInSlot(ctx context.Context, slots *renderSlots, peer string, run func(context.Context) (*render.Result, <-chan struct{})) (*render.Result, error) {
	if err := slots.acquire(ctx, peer); err != nil {
		return nil, err
	}
	res, stopped := run(ctx)
	go func() {
		<-stopped
		slots.release(peer)
	}()
	return res, nil
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
