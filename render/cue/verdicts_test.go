package cue

import (
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// docsConditionalPolicy is the conditional policy block of docs/cue.md.
func docsConditionalPolicy(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../docs/cue.md")
	require.NoError(t, err)
	doc := string(data)
	start := strings.Index(doc, "```cue\n// Clusters balanced by least request")
	require.GreaterOrEqual(t, start, 0, "docs/cue.md lost its conditional policy example")
	start += len("```cue\n")
	end := strings.Index(doc[start:], "```")
	require.Positive(t, end)
	return doc[start : start+end]
}

// The conditional policy idiom docs/cue.md shows works with CUE v0.17:
// resources without the field pass, resources with it are held to the
// rule; the naive form the docs warn about fails every resource.
func TestDocsConditionalPolicy(t *testing.T) {
	policy := docsConditionalPolicy(t)
	res := renderWithStage(exampleTree(t, "", map[string]string{"policy/cond.cue": policy}))
	assert.Empty(t, diagLines(res.Diagnostics), "clusters without lb_policy pass")

	clusters, err := os.ReadFile("../../examples/policy/nodes/edge/clusters.yaml")
	require.NoError(t, err)
	withPolicy := strings.Replace(string(clusters), "name: api\n", "name: api\nlb_policy: LEAST_REQUEST\n", 1)
	require.NotEqual(t, string(clusters), withPolicy)
	res = renderWithStage(exampleTree(t, "", map[string]string{"policy/cond.cue": policy, "nodes/edge/clusters.yaml": withPolicy}))
	assert.Equal(t, "nodes/edge/clusters.yaml:4:18: cluster \"api\" connect_timeout: 0.25s breaks policy (policy/cond.cue:6:20: <=0.1): invalid value 0.25 (out of bound <=0.1)\n", diagLines(res.Diagnostics))

	naive := strings.Replace(policy, "if lb_policy != _|_ if lb_policy", "if lb_policy", 1)
	require.NotEqual(t, policy, naive)
	res = renderWithStage(exampleTree(t, "", map[string]string{"policy/cond.cue": naive}))
	assert.Contains(t, diagLines(res.Diagnostics), "cannot reference optional field: lb_policy")
}
