package main

import "github.com/legate-dev/legate/render"

// renderOptions is the renderer configuration that `legate serve` and
// `legate validate` share, so that the offline verdict is the server's.
func renderOptions() render.Options {
	return render.Options{}
}
