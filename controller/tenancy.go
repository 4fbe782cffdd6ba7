package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/sources"
	kubesrc "github.com/legate-dev/legate/sources/kube"
	"github.com/legate-dev/legate/tenancy"
)

// ownerOf is the source owning node (the free ownerOf).
func (c *Controller) ownerOf(node string) string { return c.core.Owner(node) }

// watchSharing makes every stream check its right again when an object of
// the controller's namespace changes or goes: its sharing annotation may
// have changed. Every replica runs it (its informer is the manager's).
func (c *Controller) watchSharing(ctx context.Context) error {
	for _, obj := range []client.Object{&v1alpha1.EnvoyConfig{}, &v1alpha1.EnvoySource{}} {
		inf, err := c.mgr.GetCache().GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("watch the sharing of the controller's namespace: %w", err)
		}
		changed := func(o any) {
			if m, ok := o.(client.Object); ok && m.GetNamespace() == c.opts.Namespace {
				c.core.XDS().Reauthorize()
			}
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			UpdateFunc: func(old, now any) {
				a, okA := old.(client.Object)
				b, okB := now.(client.Object)
				if okA && okB && a.GetAnnotations()[tenancy.SharedAnnotation] != b.GetAnnotations()[tenancy.SharedAnnotation] {
					changed(now)
				}
			},
			DeleteFunc: func(o any) {
				if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
					o = d.Obj
				}
				changed(o)
			},
		}); err != nil {
			return err
		}
	}
	return nil
}

// sweepOwners releases the nodes whose stored owner is an object that no
// longer exists (deleted while no replica led): the leader runs it once
// its cache is filled (Run).
func (c *Controller) sweepOwners(ctx context.Context) {
	for _, owner := range slices.Compact(slices.Sorted(maps.Values(c.core.Engine().Owners()))) {
		r, ok := sources.ParseRef(owner)
		if !ok || !watching(c.opts.WatchNamespace, r.Namespace) {
			continue
		}
		obj := kubesrc.Object(r)
		err := c.mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(obj), obj)
		switch {
		case apierrors.IsNotFound(err):
			nodes := c.core.Pipeline().Remove(ctx, owner)
			c.log.Info("released the nodes of an object deleted while no replica led", "source", owner, "nodes", nodes)
		case err != nil && !errors.Is(err, context.Canceled):
			c.log.Error(err, "could not check that a node's owner still exists", "source", owner)
		}
	}
}

// scope is what the pipeline checks of a render beyond the renderer: the
// secrets it reads stay in its namespace, and the node IDs nobody owns
// that it takes obey the node ID policy.
func (c *Controller) scope(source string, r *render.Result) []render.Diagnostic {
	diags := secretScope(source, r)
	ns := tenancy.TenantOf(source)
	for _, node := range slices.Sorted(maps.Keys(r.Nodes)) {
		if c.core.Pipeline().Owner(node) != "" {
			continue // owned: the pipeline's claims decide
		}
		if err := c.tenancy.MayTake(ns, node); err != nil {
			diags = append(diags, render.Diagnostic{Pos: render.Position{File: "(configuration)"}, Rule: render.RuleNode, Message: err.Error()})
		}
	}
	return diags
}

// ecSource is the pipeline's name of an EnvoyConfig.
func ecSource(ec *v1alpha1.EnvoyConfig) string {
	return sources.EnvoyConfigRef(ec.Namespace, ec.Name).String()
}

// mayConfigure refuses, at admission, an object that names a node another
// namespace owns, or one the node ID policy does not give its namespace.
func (c *Controller) mayConfigure(source, node string) error {
	if node == "" {
		return nil
	}
	return c.tenancy.MayConfigure(source, node, c.ownerOf(node))
}
