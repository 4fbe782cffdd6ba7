package controller

import (
	"github.com/legate-dev/legate/preview/kubepreview"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/tenancy"
)

// newPreviews builds the pull-request previews of the EnvoySources
// (spec.previews): they render as r's sources do (the same options,
// policies, scope and fetch bounds), compare with what the core serves,
// and post through the core's dispatcher with r's forge clients.
func (c *Controller) newPreviews(r *envoySourceReconciler) *kubepreview.Previews {
	return kubepreview.New(kubepreview.Home{
		Reader:    c.client,
		Env:       r.drivers.Env(),
		Root:      kubepreview.WorkRoot(c.opts.StateDir),
		Options:   func() render.Options { return c.renderOptions(c.policies()) },
		Scope:     c.scope,
		Owner:     c.core.Pipeline().Owner,
		Tenant:    tenancy.TenantOf,
		Served:    c.core.Served,
		Connected: c.core.Connected,
		Reporter:  r.commitStatuses.Lookup,
		Post:      c.core.Statuses(),
		Log:       c.log.WithName("previews"),
	})
}
