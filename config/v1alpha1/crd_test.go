package v1alpha1_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/test/envtest"
)

// readSample decodes one manifest of config/samples.
func readSample(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "samples", name))
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(data, &u.Object), name)
	u.SetNamespace(ns)
	return u
}

// apiServer is the package's API server: each test applies its objects
// in a namespace of its own there.
var apiServer envtest.Shared

func TestMain(m *testing.M) { os.Exit(apiServer.Run(m)) }

// Every sample applies to a real API server with the generated CRDs and
// reads back as written; the CEL rule of EnvoySource refuses a source that
// names no place or two.
func TestSamplesApply(t *testing.T) {
	cluster, ns := apiServer.Namespace(t)
	c := cluster.Client
	ctx := context.Background()
	samples, err := filepath.Glob(filepath.Join("..", "samples", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, samples)
	for _, path := range samples {
		u := readSample(t, ns, filepath.Base(path))
		require.NoError(t, c.Create(ctx, u), path)
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(u.GroupVersionKind())
		require.NoError(t, c.Get(ctx, clientKey(u), got), path)
		assert.Equal(t, u.Object["spec"], withoutDefaults(got.Object["spec"], u.Object["spec"]), path)
	}

	both := readSample(t, ns, "envoysource-git.yaml")
	both.SetName("both")
	both.Object["spec"].(map[string]any)["oci"] = map[string]any{"url": "oci://registry.example.com/x"}
	err = c.Create(ctx, both)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exactly one of git, oci and sourceRef must be set")

	none := readSample(t, ns, "envoysource-flux.yaml")
	none.SetName("none")
	delete(none.Object["spec"].(map[string]any), "sourceRef")
	err = c.Create(ctx, none)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exactly one of git, oci and sourceRef must be set")

	bad := readSample(t, ns, "envoyconfig.yaml")
	bad.SetName("bad-node")
	bad.Object["spec"].(map[string]any)["nodeID"] = "Not A Node"
	err = c.Create(ctx, bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.nodeID")
}

// withoutDefaults drops from got the fields the API server defaulted that
// want does not set (interval).
func withoutDefaults(got, want any) any {
	g, ok := got.(map[string]any)
	w, ok2 := want.(map[string]any)
	if !ok || !ok2 {
		return got
	}
	out := map[string]any{}
	for k, v := range g {
		if _, set := w[k]; set {
			out[k] = v
		}
	}
	return out
}

// A MARIN3R EnvoyConfig decodes into the Go types with every field, and
// encodes back with MARIN3R's field names.
func TestEnvoyConfigSpeaksMARIN3R(t *testing.T) {
	manifest := `apiVersion: legate.dev/v1alpha1
kind: EnvoyConfig
metadata: {name: edge, namespace: default}
spec:
  nodeID: edge
  serialization: yaml
  envoyAPI: v3
  envoyResources:
    clusters:
      - name: backend
        value: "{name: backend, connect_timeout: 1s}"
    secrets:
      - name: edge-cert
  resources:
    - type: secret
      generateFromOpaqueSecret: {name: tokens, key: hmac, alias: hmac}
    - type: endpoint
      generateFromEndpointSlices:
        selector: {matchLabels: {app: backend}}
        clusterName: backend
        targetPort: http
    - type: secret
      generateFromTlsSecret: ca
      blueprint: validationContext
status:
  cacheState: InSync
  publishedVersion: abc
  desiredVersion: abc
  revisions:
    - version: abc
      ref: {name: edge-abc, namespace: default}
`
	var ec v1alpha1.EnvoyConfig
	require.NoError(t, yaml.UnmarshalStrict([]byte(manifest), &ec))
	assert.Equal(t, "edge", ec.Spec.NodeID)
	require.Len(t, ec.Spec.EnvoyResources.Clusters, 1)
	assert.Equal(t, "edge-cert", ec.Spec.EnvoyResources.Secrets[0].Name)
	assert.Equal(t, "hmac", ec.Spec.Resources[0].GenerateFromOpaqueSecret.Key)
	assert.Equal(t, "backend", ec.Spec.Resources[1].GenerateFromEndpointSlices.ClusterName)
	assert.Equal(t, "validationContext", *ec.Spec.Resources[2].Blueprint)
	assert.Equal(t, v1alpha1.CacheInSync, *ec.Status.CacheState)
	assert.Equal(t, "edge-abc", ec.Status.ConfigRevisions[0].Ref.Name)

	out, err := json.Marshal(ec)
	require.NoError(t, err)
	for _, field := range []string{`"nodeID"`, `"envoyAPI"`, `"envoyResources"`, `"generateFromTlsSecret"`, `"generateFromOpaqueSecret"`, `"generateFromEndpointSlices"`, `"cacheState"`, `"publishedVersion"`, `"desiredVersion"`, `"revisions"`} {
		assert.Contains(t, string(out), field)
	}
}

func clientKey(u *unstructured.Unstructured) client.ObjectKey {
	return client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}
}
