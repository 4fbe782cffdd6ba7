package cue

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
)

// A resource written against the schema may carry "@type" as in YAML, and
// an enum typo is one error at the line of the value that names the
// allowed values, not one per value at the reference to the schema.
func TestCUESchemaResources(t *testing.T) {
	cluster := func(typ, url string) fstest.MapFS {
		return fstest.MapFS{"nodes/edge/config.cue": {Data: []byte(`package edge

import "legate.dev/envoy"

cluster: envoy.#Cluster & {
	"@type":         "` + url + `"
	name:            "api"
	connect_timeout: "0.25s"
	type:            "` + typ + `"
}
`)}}
	}
	res := renderWithStage(cluster("STATIC", "type.googleapis.com/envoy.config.cluster.v3.Cluster"))
	assert.Empty(t, diagLines(res.Diagnostics))
	assert.Contains(t, res.Nodes, "edge")

	res = renderWithStage(cluster("STATC", "type.googleapis.com/envoy.config.cluster.v3.Cluster"))
	assert.Equal(t, "nodes/edge/config.cue:9:19: cluster.type: \"STATC\" is not one of EDS, LOGICAL_DNS, ORIGINAL_DST, STATIC, STRICT_DNS; did you mean STATIC?\n", diagLines(res.Diagnostics))

	res = renderWithStage(cluster("STATIC", "type.googleapis.com/envoy.config.listener.v3.Listener"))
	assert.Contains(t, diagLines(res.Diagnostics), `nodes/edge/config.cue:6:19: cluster["@type"]: conflicting values`)
}
