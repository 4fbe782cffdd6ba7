package render

import (
	"fmt"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// endpointsDoc is an EnvoyConfig of node n whose cluster api takes its
// endpoints from the EndpointSlices gen selects.
func endpointsDoc(gen string, more ...string) string {
	doc := `apiVersion: legate.dev/v1alpha1
kind: EnvoyConfig
metadata: {name: e, namespace: shop}
spec:
  nodeID: n
  resources:
  - type: cluster
    value: {name: api, type: EDS, eds_cluster_config: {eds_config: {ads: {}}}}
  - type: endpoint
    generateFromEndpointSlices: ` + gen + "\n"
	for _, m := range more {
		doc += m + "\n"
	}
	return doc
}

func renderEndpoints(t *testing.T, doc string) *Result {
	t.Helper()
	return RenderDocuments([]Document{{Path: "e.yaml", Data: []byte(doc)}}, Options{EndpointSlices: true})
}

// The Kubernetes home learns, per node, which load assignments to build:
// the selector in its canonical text (so equal selectors hash equal), the
// object's namespace and the port.
func TestGeneratedEndpointsAreNamedOnTheNode(t *testing.T) {
	res := renderEndpoints(t, endpointsDoc(`{selector: {matchLabels: {tier: web, app: api}, matchExpressions: [{key: track, operator: In, values: [stable, canary]}]}, clusterName: api, targetPort: http}`))
	require.True(t, res.OK(), "%v", res.Diagnostics)
	nc := res.Nodes["n"]
	require.Len(t, nc.ExternalEndpoints, 1)
	ext := nc.ExternalEndpoints[0]
	assert.Equal(t, ExternalEndpoints{
		ClusterName: "api", Namespace: "shop", Selector: "app=api,tier=web,track in (canary,stable)", TargetPort: "http",
		Source: Position{File: "e.yaml", Line: 10, Column: 33},
	}, ext)
	_, rendered := nc.Types[EndpointType]
	assert.False(t, rendered, "the load assignment is the home's to build, not part of the content")

	same := renderEndpoints(t, endpointsDoc(`{clusterName: api, targetPort: http, selector: {matchExpressions: [{key: track, operator: In, values: [canary, stable]}], matchLabels: {app: api, tier: web}}}`))
	assert.Equal(t, nc.Hash, same.Nodes["n"].Hash, "key order does not change the hash")
	for _, changed := range []string{
		`{selector: {matchLabels: {tier: web, app: api}, matchExpressions: [{key: track, operator: In, values: [stable]}]}, clusterName: api, targetPort: http}`,
		`{selector: {matchLabels: {tier: web, app: api}, matchExpressions: [{key: track, operator: In, values: [stable, canary]}]}, clusterName: api, targetPort: grpc}`,
	} {
		assert.NotEqual(t, nc.Hash, renderEndpoints(t, endpointsDoc(changed)).Nodes["n"].Hash, changed)
	}
	other := renderEndpoints(t, endpointsDoc(`{selector: {matchLabels: {tier: web, app: api}, matchExpressions: [{key: track, operator: In, values: [stable, canary]}]}, clusterName: api, targetPort: http}`))
	other.Nodes["n"].ExternalEndpoints[0].Namespace = "other"
	assert.NotEqual(t, nc.Hash, HashNode(other.Nodes["n"]), "the namespace is part of the hash")
}

// Every mistake in a generateFromEndpointSlices entry is refused with
// its place and what to write instead.
func TestGeneratedEndpointsMistakes(t *testing.T) {
	static := `  - type: endpoint
    value: {cluster_name: api, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 10.0.0.1, port_value: 80}}}}]}]}`
	for _, tc := range []struct{ gen, want string }{
		{`{clusterName: api}`, `e.yaml:10:33: generateFromEndpointSlices.selector is required: the labels of the EndpointSlices to use, e.g. matchLabels: {kubernetes.io/service-name: NAME}`},
		{`{selector: {}, clusterName: api}`, `e.yaml:10:44: generateFromEndpointSlices.selector selects every EndpointSlice of the namespace: name the Service's, e.g. matchLabels: {kubernetes.io/service-name: NAME}`},
		{`{selector: {matchLabels: {app: api}}}`, `e.yaml:10:33: generateFromEndpointSlices.clusterName is required: the cluster whose endpoints the EndpointSlices give`},
		{`{selector: {matchExpressions: [{key: app, operator: Like, values: [a]}]}, clusterName: api}`, `e.yaml:10:85: generateFromEndpointSlices.selector.matchExpressions: operator "Like": want In, NotIn, Exists or DoesNotExist`},
		{`{selector: {matchLabels: {"bad key!": api}}, clusterName: api}`, `e.yaml:10:59: generateFromEndpointSlices.selector: key: Invalid value: "bad key!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		{`{selector: {matchExpressions: [{key: app, operator: In}]}, clusterName: api}`, `e.yaml:10:64: generateFromEndpointSlices.selector.matchExpressions: operator In needs values`},
		{`{selector: {matchExpressions: [{key: app, operator: Exists, values: [a]}]}, clusterName: api}`, `e.yaml:10:101: generateFromEndpointSlices.selector.matchExpressions: operator Exists takes no values`},
		{`{selector: {matchLabels: {app: api}}, clusterName: api, port: http}`, `e.yaml:10:89: unknown field "port": want one of selector, clusterName, targetPort`},
	} {
		res := renderEndpoints(t, endpointsDoc(tc.gen))
		require.False(t, res.OK(), tc.gen)
		var got []string
		for _, d := range res.Diagnostics {
			got = append(got, d.String())
		}
		assert.Contains(t, got, tc.want, tc.gen)
	}

	res := renderEndpoints(t, endpointsDoc(`{selector: {matchLabels: {app: api}}, clusterName: api}`, static))
	require.Len(t, res.Diagnostics, 1)
	assert.Equal(t, `e.yaml:10:33: endpoint "api": generated from EndpointSlices and also listed at e.yaml:12:12: keep one`, res.Diagnostics[0].String())

	twice := `  - type: endpoint
    generateFromEndpointSlices: {selector: {matchLabels: {app: other}}, clusterName: api}`
	res = renderEndpoints(t, endpointsDoc(`{selector: {matchLabels: {app: api}}, clusterName: api}`, twice))
	require.Len(t, res.Diagnostics, 1)
	assert.Equal(t, `e.yaml:12:33: endpoints of cluster "api" are already generated from EndpointSlices at e.yaml:10:33: one entry per cluster`, res.Diagnostics[0].String())
}

// A home that does not build endpoints from EndpointSlices (standalone)
// gets no ExternalEndpoints: it could not serve them.
func TestGeneratedEndpointsOnlyWhereTheHomeBuildsThem(t *testing.T) {
	res := Render(fstest.MapFS{"e.yaml": {Data: []byte(endpointsDoc(`{selector: {matchLabels: {app: api}}, clusterName: api}`))}}, Options{})
	require.True(t, res.OK(), fmt.Sprint(res.Diagnostics))
	assert.Empty(t, res.Nodes["n"].ExternalEndpoints)
}
