package pipeline

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"

	"github.com/legate-dev/legate/render"
)

// Diagnostics of an EnvoyConfig's document name the object and the field
// path in it, not a line of a file its author never saw; diagnostics of
// other files are left as they are.
func TestInObject(t *testing.T) {
	files := fstest.MapFS{"team-a/edge.yaml": {Data: []byte("kind: EnvoyConfig\nspec:\n  nodeID: edge\n  resources:\n  - type: cluster\n    value:\n      connect_timeout: -1s\n")}}
	ds := InObject("EnvoyConfig", files, []render.Diagnostic{
		{Pos: render.Position{File: "team-a/edge.yaml", Line: 7, Column: 7}, Type: "type.googleapis.com/envoy.config.cluster.v3.Cluster", Name: "backend", Field: "connect_timeout", Message: "must be positive"},
		{Pos: render.Position{File: "team-a/edge.yaml"}, Message: "expands to more than its budget"},
		{Pos: render.Position{File: "envoy/routes.yaml", Line: 3, Column: 1}, Message: "from a repository"},
	})
	assert.Equal(t, `EnvoyConfig team-a/edge spec.resources[0].value.connect_timeout: cluster "backend": must be positive`, ds[0].String())
	assert.Equal(t, "EnvoyConfig team-a/edge: expands to more than its budget", ds[1].String())
	assert.Equal(t, "envoy/routes.yaml:3:1: from a repository", ds[2].String())
}
