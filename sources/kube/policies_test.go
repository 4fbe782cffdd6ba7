package kube_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/legate-dev/legate/sources/kube"
)

// The policy directory gives its *.cue files, and the ConfigMaps their
// *.cue entries, each under a name that says where it came from.
func TestPoliciesNameTheirOrigin(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.cue"), []byte("a: 1"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("no"), 0o600))
	fromDir, err := kube.ReadPolicyDir(dir)
	require.NoError(t, err)
	set, over := kube.Policies(fromDir, []corev1.ConfigMap{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "legate-system", Name: "rules"},
		Data:       map[string]string{"b.cue": "b: 2", "README": "no"},
	}})
	assert.Empty(t, over)
	assert.Equal(t, map[string][]byte{"policy-dir/a.cue": []byte("a: 1"), "configmap/legate-system/rules/b.cue": []byte("b: 2")}, set)
	assert.Len(t, fromDir, 1, "the directory's set is not changed by the ConfigMaps")
}

// Policies beyond MaxPolicyBytes are not read: the ConfigMap that passes
// the bound is named, the directory's set is not read at all.
func TestPoliciesAreBounded(t *testing.T) {
	big := strings.Repeat("x", kube.MaxPolicyBytes/2+1)
	set, over := kube.Policies(nil, []corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "one"}, Data: map[string]string{"a.cue": big}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "two"}, Data: map[string]string{"b.cue": big}},
	})
	assert.Equal(t, "two", over)
	assert.Equal(t, []string{"configmap/ns/one/a.cue"}, slices.Collect(maps.Keys(set)))

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.cue"), []byte(big), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.cue"), []byte(big), 0o600))
	_, err := kube.ReadPolicyDir(dir)
	require.ErrorContains(t, err, "policy directory "+dir+" holds more than")
}

// The set in force starts as the directory's; a read adds the labelled
// ConfigMaps of the controller's namespace only, and Replace reports
// whether the set says something new.
func TestPolicySet(t *testing.T) {
	dir := map[string][]byte{"policy-dir/base.cue": []byte("a: 1")}
	labelled := func(ns, name, data string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{kube.PolicyLabel: "true"}},
			Data:       map[string]string{"rules.cue": data},
		}
	}
	reader := fake.NewClientBuilder().WithObjects(
		labelled("legate-system", "rules", "b: 2"),
		labelled("team-a", "rules", "c: 3"), // a tenant's: never read
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "legate-system", Name: "unlabelled"}, Data: map[string]string{"x.cue": "x: 1"}},
	).Build()
	p := kube.NewPolicySet(dir)
	assert.Equal(t, dir, p.Current())

	set, over, err := p.Read(context.Background(), reader, "legate-system")
	require.NoError(t, err)
	assert.Empty(t, over)
	assert.Equal(t, []string{"configmap/legate-system/rules/rules.cue", "policy-dir/base.cue"}, slices.Sorted(maps.Keys(set)))
	assert.Equal(t, dir, p.Current(), "a read puts nothing in force")

	assert.True(t, p.Replace(set), "a new entry")
	assert.Equal(t, set, p.Current())
	assert.False(t, p.Replace(maps.Clone(set)), "the same set again")
	changed := maps.Clone(set)
	changed["policy-dir/base.cue"] = []byte("a: 2")
	assert.True(t, p.Replace(changed), "an entry says something else")
}
