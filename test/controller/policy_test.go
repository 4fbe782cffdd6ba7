package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/pipeline/readiness"
)

// A policy ConfigMap of the controller's namespace binds every
// EnvoyConfig: one already served is judged again when the policy
// arrives (refused with the policy's file and line, the last good
// revision still served) and served again when the policy goes. A
// labelled ConfigMap of another namespace imposes nothing.
func TestPolicyConfigMapsBindEveryEnvoyConfig(t *testing.T) {
	t.Parallel()
	c, _ := run(t)
	ctx := context.Background()
	ec := sample(t) // its cluster has connect_timeout: 2s
	require.NoError(t, c.Create(ctx, ec))
	ready := func() *metav1.Condition {
		return meta.FindStatusCondition(get(t, c, ec).Status.Conditions, v1alpha1.ConditionReady)
	}
	require.Eventually(t, func() bool { r := ready(); return r != nil && r.Status == metav1.ConditionTrue }, 60*time.Second, 50*time.Millisecond)
	published := *get(t, c, ec).Status.PublishedVersion

	policy := map[string]string{"timeouts.cue": "cluster: connect_timeout: <=1\n"}
	elsewhere := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "rules", Namespace: "default", Labels: map[string]string{controller.PolicyLabel: "true"}},
		Data:       policy,
	}
	require.NoError(t, c.Create(ctx, elsewhere))
	rules := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "rules", Namespace: "legate-system", Labels: map[string]string{controller.PolicyLabel: "true"}},
		Data:       policy,
	}
	require.NoError(t, c.Create(ctx, rules))
	var r *metav1.Condition
	require.Eventually(t, func() bool { r = ready(); return r != nil && r.Reason == readiness.ReasonValidationFailed }, 60*time.Second, 50*time.Millisecond,
		"the served configuration is judged by the new policy")
	assert.Contains(t, r.Message, "breaks policy (configmap/legate-system/rules/timeouts.cue:1:27: <=1)")
	assert.NotContains(t, r.Message, "configmap/default/", "a ConfigMap outside the controller's namespace imposes nothing")
	assert.Equal(t, published, *get(t, c, ec).Status.PublishedVersion, "the last good revision stays served")

	require.NoError(t, c.Delete(ctx, rules))
	require.Eventually(t, func() bool { r = ready(); return r != nil && r.Status == metav1.ConditionTrue }, 60*time.Second, 50*time.Millisecond,
		"without the policy it is served again")
}
