package kube_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/sources/kube"
	"github.com/legate-dev/legate/test/envtest"
)

func newClient(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	c, err := client.New(envtest.Start(t).Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return c
}

// The sample EnvoyConfig (MARIN3R's shape) is fetched from a real API
// server and rendered as a file of a repository would be: its node, its
// resources, its TLS secret resolved in the object's namespace. A status
// write changes nothing rendered; a spec change is a new generation; a
// deleted object says it is gone.
func TestEnvoyConfigObjectRenders(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "envoyconfig.yaml"))
	require.NoError(t, err)
	var ec v1alpha1.EnvoyConfig
	require.NoError(t, yaml.UnmarshalStrict(data, &ec))
	ec.Namespace = "default"
	require.NoError(t, c.Create(ctx, &ec))

	src := kube.NewEnvoyConfigSource(c, client.ObjectKeyFromObject(&ec))
	assert.Equal(t, "envoyconfig/default/edge", src.Name())
	res, err := src.Fetch(ctx)
	require.NoError(t, err)
	assert.True(t, res.Changed)
	assert.Equal(t, "default/edge@1", res.Origin.Revision())

	out := render.Render(res.Files, render.Options{})
	require.True(t, out.OK(), "%v", out.Diagnostics)
	node := out.Nodes["edge"]
	require.NotNil(t, node, "the object's nodeID")
	assert.Len(t, node.Types["type.googleapis.com/envoy.config.cluster.v3.Cluster"].Resources, 1)
	assert.Len(t, node.Types["type.googleapis.com/envoy.config.listener.v3.Listener"].Resources, 1)
	require.Len(t, node.ExternalSecrets, 1)
	assert.Equal(t, "default/edge-cert", node.ExternalSecrets[0].Ref, "a secret resolves in the object's namespace")
	assert.Equal(t, "tls", node.ExternalSecrets[0].Kind)

	cacheState := v1alpha1.CacheInSync
	ec.Status.CacheState = &cacheState
	require.NoError(t, c.Status().Update(ctx, &ec))
	again, err := src.Fetch(ctx)
	require.NoError(t, err)
	assert.False(t, again.Changed, "a status write renders nothing new")
	assert.Equal(t, res.Content, again.Content)

	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(&ec), &ec))
	ec.Spec.Resources = ec.Spec.Resources[:1]
	require.NoError(t, c.Update(ctx, &ec))
	changed, err := src.Fetch(ctx)
	require.NoError(t, err)
	assert.True(t, changed.Changed)
	assert.Equal(t, "default/edge@2", changed.Origin.Revision())
	// The object the fetch read is handed over once, as the API server
	// held it: its home writes the status from it.
	read := src.Read()
	require.NotNil(t, read)
	assert.Equal(t, int64(2), read.Generation)
	assert.Equal(t, ec.ResourceVersion, read.ResourceVersion)
	assert.Nil(t, src.Read(), "the source keeps no copy")

	_, err = src.Fetch(ctx) // read, and not taken
	require.NoError(t, err)
	require.NoError(t, c.Delete(ctx, &ec))
	_, err = src.Fetch(ctx)
	require.ErrorIs(t, err, kube.ErrGone)
	assert.ErrorContains(t, err, "default/edge")
	assert.Nil(t, src.Read(), "a failed fetch leaves no object to write a status from")
}
