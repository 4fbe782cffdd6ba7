package main

import (
	"github.com/legate-dev/legate/render"
	legatecue "github.com/legate-dev/legate/render/cue"
)

// newRenderOptions returns the renderer configuration that `legate serve`
// and `legate validate` share, so that the offline verdict is the
// server's. Each call of the function returned makes a fresh CUE stage (a
// stage holds the policies of one render); the stages share one generated
// schema, built once.
func newRenderOptions() func() render.Options {
	with := newPolicyRenderOptions()
	return func() render.Options { return with(nil) }
}

// newPolicyRenderOptions is newRenderOptions for a home that imposes
// policies of its own (path → CUE source) on every render besides those of
// the rendered tree: the Kubernetes controller's.
func newPolicyRenderOptions() func(policies map[string][]byte) render.Options {
	schema := legatecue.NewSchema()
	return func(policies map[string][]byte) render.Options {
		stage := legatecue.NewStage(schema).WithPolicies(policies)
		return render.Options{
			Generators: []render.Generator{stage},
			Checks:     []render.Check{stage},
		}
	}
}
