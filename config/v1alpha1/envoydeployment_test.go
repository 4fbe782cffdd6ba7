package v1alpha1_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/config/v1alpha1"
)

// MARIN3R's own EnvoyDeployment manifests, with only their apiVersion
// changed, decode strictly into the Go types (no field of theirs is
// unknown to legate) and are accepted by a real API server as written.
func TestEnvoyDeploymentSpeaksMARIN3R(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "marin3r", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 3)
	cluster, ns := apiServer.Namespace(t)
	c := cluster.Client
	ctx := context.Background()
	for _, path := range files {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		var ed v1alpha1.EnvoyDeployment
		require.NoError(t, yaml.UnmarshalStrict(data, &ed), path)
		assert.NotEmpty(t, ed.Spec.EnvoyConfigRef, path)
		assert.NotEmpty(t, ed.Spec.Ports, path)

		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal(data, &u.Object), path)
		u.SetNamespace(ns)
		require.NoError(t, c.Create(ctx, u), path)
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(u.GroupVersionKind())
		require.NoError(t, c.Get(ctx, clientKey(u), got), path)
		assert.Equal(t, u.Object["spec"], got.Object["spec"], path)
	}

	kuard := readMARIN3R(t, "envoydeployment-kuard.yaml")
	require.NotNil(t, kuard.Spec.Replicas.Dynamic)
	assert.Equal(t, int32(10), kuard.Spec.Replicas.Dynamic.MaxReplicas)
	require.Len(t, kuard.Spec.Replicas.Dynamic.Metrics, 1)
	assert.Equal(t, int32(1), kuard.Spec.PodDisruptionBudget.MinAvailable.IntVal)
	assert.Equal(t, "quay.io/3scale/marin3r:test", *kuard.Spec.ShutdownManager.Image)
	assert.Equal(t, "/dev/stdout", *kuard.Spec.AdminAccessLogPath)
}

// The API server refuses what cannot be built, naming the field: static
// and dynamic replicas together, replicas for a DaemonSet, both PDB
// bounds, a deployment patch of a DaemonSet.
func TestEnvoyDeploymentValidation(t *testing.T) {
	cluster, ns := apiServer.Namespace(t)
	c := cluster.Client
	ctx := context.Background()
	for name, tc := range map[string]struct {
		spec string
		want string
	}{
		"static and dynamic": {`{envoyConfigRef: e, replicas: {static: 1, dynamic: {maxReplicas: 2}}}`, "spec.replicas: set one of static and dynamic"},
		"daemonset replicas": {`{envoyConfigRef: e, mode: DaemonSet, replicas: {static: 2}}`, "spec.replicas: a DaemonSet runs one proxy per node"},
		"both pdb bounds":    {`{envoyConfigRef: e, podDisruptionBudget: {minAvailable: 1, maxUnavailable: 1}}`, "spec.podDisruptionBudget: set one of"},
		"min above max":      {`{envoyConfigRef: e, replicas: {dynamic: {minReplicas: 3, maxReplicas: 2}}}`, "minReplicas is above maxReplicas"},
		"daemonset patch":    {`{envoyConfigRef: e, patch: {daemonSet: {value: {}}}}`, "spec.patch.daemonSet"},
		"deployment patch":   {`{envoyConfigRef: e, mode: DaemonSet, patch: {deployment: {value: {}}}}`, "spec.patch.deployment"},
		"no ref":             {`{envoyConfigRef: ""}`, "spec.envoyConfigRef"},
		"bad mode":           {`{envoyConfigRef: e, mode: StatefulSet}`, "spec.mode"},
	} {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal([]byte("apiVersion: legate.dev/v1alpha1\nkind: EnvoyDeployment\nmetadata: {name: bad}\nspec: "+tc.spec), &u.Object))
			u.SetNamespace(ns)
			err := c.Create(ctx, u)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func readMARIN3R(t *testing.T, name string) v1alpha1.EnvoyDeployment {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "marin3r", name))
	require.NoError(t, err)
	var ed v1alpha1.EnvoyDeployment
	require.NoError(t, yaml.UnmarshalStrict(data, &ed))
	return ed
}
