package kubecache_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/kubecache"
)

// The cache holds the policy ConfigMaps of the home's namespace and the
// injected Pods only, and every namespace unless one is watched.
func TestOptionsScopeTheCache(t *testing.T) {
	o, err := kubecache.Options("legate-system", "")
	require.NoError(t, err)
	assert.Nil(t, o.DefaultNamespaces, "every namespace")
	assert.NotNil(t, o.DefaultTransform)
	var cms, pods *cache.ByObject
	for obj, by := range o.ByObject {
		switch obj.(type) {
		case *corev1.ConfigMap:
			cms = &by
		case *corev1.Pod:
			pods = &by
		}
	}
	require.NotNil(t, cms)
	require.NotNil(t, pods)
	assert.Equal(t, map[string]cache.Config{"legate-system": {}}, cms.Namespaces, "no other namespace's ConfigMap")
	assert.True(t, cms.Label.Matches(labels.Set{"legate.dev/policy": ""}))
	assert.False(t, cms.Label.Matches(labels.Set{"app": "x"}), "an unlabelled ConfigMap is not cached")
	assert.False(t, pods.Label.Matches(labels.Set{}), "a Pod legate did not inject is not cached")
	assert.NotNil(t, pods.Transform)

	watched, err := kubecache.Options("legate-system", "team-a")
	require.NoError(t, err)
	assert.Equal(t, map[string]cache.Config{"team-a": {}, "legate-system": {}}, watched.DefaultNamespaces)
}

func TestSchemeKnowsLegatesKinds(t *testing.T) {
	s, err := kubecache.Scheme()
	require.NoError(t, err)
	assert.True(t, s.Recognizes(v1alpha1.GroupVersion.WithKind("EnvoyConfig")))
	assert.True(t, s.Recognizes(corev1.SchemeGroupVersion.WithKind("Secret")))
}
