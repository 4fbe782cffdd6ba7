package envoydeployment

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/legate-dev/legate/config/v1alpha1"
)

// A namespace reaches nothing of another: a qualified reference is
// accepted for the EnvoyDeployment's own namespace only, and the refusal
// names the field.
func TestConfigName(t *testing.T) {
	for ref, want := range map[string]string{"edge": "edge", "shop/edge": "edge", "other/edge": "", "/edge": ""} {
		ed := &v1alpha1.EnvoyDeployment{ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "shop"}, Spec: v1alpha1.EnvoyDeploymentSpec{EnvoyConfigRef: ref}}
		got, err := configName(ed)
		if want == "" {
			require.Error(t, err, ref)
			assert.Contains(t, err.Error(), "spec.envoyConfigRef", ref)
			continue
		}
		require.NoError(t, err, ref)
		assert.Equal(t, want, got, ref)
	}
}

func TestJudge(t *testing.T) {
	served := &v1alpha1.ServedRevision{Hash: "abc", Version: "abc"}
	for name, tc := range map[string]struct {
		r      rollout
		served *v1alpha1.ServedRevision
		want   string
	}{
		"not served":  {rollout{kind: "Deployment", desired: 2, ready: 2, updated: 2, done: true}, nil, ReasonNotServed},
		"rolling out": {rollout{kind: "Deployment", desired: 2, ready: 1, updated: 1}, served, ReasonProgressing},
		"ready":       {rollout{kind: "DaemonSet", desired: 3, ready: 3, updated: 3, done: true}, served, ReasonSucceeded},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, judge(tc.r, tc.served).reason)
		})
	}
}
