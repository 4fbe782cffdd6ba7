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
	schema := legatecue.NewSchema()
	return func() render.Options {
		stage := legatecue.NewStage(schema)
		return render.Options{
			Generators: []render.Generator{stage},
			Checks:     []render.Check{stage},
		}
	}
}
