package kuberollout

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/rollout/analysis"
)

// The API's rollout (the sample the docs show) becomes the engine's plan:
// a timed pause written {duration: 1m}, the analysis validated; a policy
// the schema lets through but the compiler refuses names its field and
// leaves the source without a plan.
func TestRolloutPlansFromTheAPI(t *testing.T) {
	raw, err := os.ReadFile("../../config/samples/envoyconfig-rollout.yaml")
	require.NoError(t, err)
	var ec v1alpha1.EnvoyConfig
	require.NoError(t, yaml.UnmarshalStrict(raw, &ec))
	var plans Plans
	require.NoError(t, plans.Set("envoyconfig/team-a/edge", ec.Spec.Rollout))
	plan := plans.Plan("envoyconfig/team-a/edge")
	require.NotNil(t, plan)
	require.Len(t, plan.Steps, 4)
	assert.Equal(t, rollout.StepProxies, plan.Steps[0].Kind)
	assert.Equal(t, rollout.StepPause, plan.Steps[1].Kind)
	assert.False(t, plan.Steps[1].Untimed, "{duration: 1m} is a timed pause")
	assert.True(t, plan.Steps[3].Untimed, "{} waits for promote")

	ten, five := "10%", "5%"
	err = plans.Set("envoyconfig/team-a/edge", &v1alpha1.RolloutSpec{Steps: []v1alpha1.RolloutStep{{Proxies: &ten}, {Proxies: &five}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.rollout.steps[1].proxies")
	assert.Nil(t, plans.Plan("envoyconfig/team-a/edge"), "a refused policy leaves no plan")

	require.NoError(t, plans.Set("envoyconfig/team-a/edge", nil))
	assert.Nil(t, plans.Plan("envoyconfig/team-a/edge"))
}

// A check's secret header is read from the source's own namespace only,
// and never from a file.
func TestRolloutSecretsStayInTheirNamespace(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects( // client-go's scheme has Secrets
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "smoke"}, Data: map[string][]byte{"token": []byte("Bearer a")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "theirs"}, Data: map[string][]byte{"token": []byte("Bearer b")}},
	).Build()
	ctx := context.Background()
	mine := namespacedSecrets{reader: c, namespace: "team-a"}

	v, err := mine.Resolve(ctx, analysis.ValueSource{SecretKeyRef: &analysis.SecretKeyRef{Name: "smoke", Key: "token"}})
	require.NoError(t, err)
	assert.Equal(t, "Bearer a", v)
	_, err = mine.Resolve(ctx, analysis.ValueSource{SecretKeyRef: &analysis.SecretKeyRef{Name: "theirs", Key: "token"}})
	require.Error(t, err, "team-b's Secret is not found from team-a")
	assert.NotContains(t, err.Error(), "Bearer")
	_, err = mine.Resolve(ctx, analysis.ValueSource{File: "/var/run/secrets/kubernetes.io/serviceaccount/token"})
	assert.ErrorContains(t, err, "only secretKeyRef")
	_, err = mine.Resolve(ctx, analysis.ValueSource{SecretKeyRef: &analysis.SecretKeyRef{Name: "smoke", Key: "nope"}})
	assert.ErrorContains(t, err, `no key "nope"`)
}
