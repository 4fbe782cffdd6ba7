package main

import (
	"github.com/legate-dev/legate/render"
	legatecue "github.com/legate-dev/legate/render/cue"
)

// renderOptions is the renderer configuration that `legate serve` and
// `legate validate` share, so that the offline verdict is the server's. Each
// call returns a fresh CUE stage: a stage holds the policies of one render.
func renderOptions() render.Options {
	stage := legatecue.New()
	return render.Options{
		Generators: []render.Generator{stage},
		Checks:     []render.Check{stage},
	}
}
