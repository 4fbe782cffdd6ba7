package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/render"
)

// admissionOf is the admission request of ec, in namespace default as the
// API server sends it (the object may omit its namespace).
func admissionOf(t *testing.T, ec *v1alpha1.EnvoyConfig) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(ec)
	require.NoError(t, err)
	return &admissionv1.AdmissionRequest{Namespace: "default", Name: ec.Name, Kind: metav1.GroupVersionKind{Kind: "EnvoyConfig"}, Object: runtime.RawExtension{Raw: raw}}
}

func cluster(value string) *v1alpha1.EnvoyConfig {
	return &v1alpha1.EnvoyConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: "legate.dev/v1alpha1", Kind: "EnvoyConfig"},
		ObjectMeta: metav1.ObjectMeta{Name: "edge"},
		Spec: v1alpha1.EnvoyConfigSpec{NodeID: "edge", Resources: []v1alpha1.Resource{
			{Type: "cluster", Value: &runtime.RawExtension{Raw: []byte(value)}},
		}},
	}
}

// recording are the home's decisions, recording what they were asked.
type recording struct {
	refuse  error // of MayConfigure
	scoped  []string
	scopeBy []render.Diagnostic
}

func (r *recording) objects() *Objects {
	return &Objects{
		MayConfigure:  func(*v1alpha1.EnvoyConfig) error { return r.refuse },
		Policies:      func(context.Context) (map[string][]byte, error) { return nil, nil },
		RenderOptions: func(map[string][]byte) render.Options { return render.Options{} },
		SecretScope: func(ec *v1alpha1.EnvoyConfig, _ *render.Result) []render.Diagnostic {
			r.scoped = append(r.scoped, ec.Namespace+"/"+ec.Name)
			return r.scopeBy
		},
	}
}

// What admission answers for an EnvoyConfig: the tenancy refusal under
// the field that caused it, the renderer's diagnostics, the secret scope
// of a configuration that renders (and only of one that does), and
// nothing for a good one.
func TestObjectsValidateEnvoyConfig(t *testing.T) {
	good := `{"name":"backend","type":"STRICT_DNS","connect_timeout":"1s"}`
	bad := `{"name":"backend","type":"STRICT_DNS","connect_timeout":"-1s"}`
	for _, tc := range []struct {
		name   string
		rec    recording
		ec     *v1alpha1.EnvoyConfig
		err    []string // "" none
		scoped []string
	}{
		{name: "admitted", ec: cluster(good), scoped: []string{"default/edge"}},
		{
			name: "another namespace's node", rec: recording{refuse: errors.New("node edge is not this namespace's")}, ec: cluster(good),
			err: []string{"EnvoyConfig default/edge: spec.nodeID: node edge is not this namespace's"},
		},
		{name: "refused by the renderer", ec: cluster(bad), err: []string{"EnvoyConfig default/edge is refused by validation", "connect_timeout"}},
		{
			name: "a Secret of another namespace", ec: cluster(good), scoped: []string{"default/edge"},
			rec: recording{scopeBy: []render.Diagnostic{{Rule: "secret-scope", Message: "reads the Secrets of its own namespace only"}}},
			err: []string{"EnvoyConfig default/edge is refused by validation (1 error(s))", "its own namespace only"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.rec.objects().ValidateEnvoyConfig(t.Context(), admissionOf(t, tc.ec))
			if len(tc.err) == 0 {
				require.NoError(t, err)
			}
			for _, want := range tc.err {
				assert.ErrorContains(t, err, want)
			}
			assert.Equal(t, tc.scoped, tc.rec.scoped)
		})
	}
}

// A refusal lists at most maxAdmissionDiagnostics errors and counts the
// rest.
func TestRefusalIsBounded(t *testing.T) {
	diags := make([]render.Diagnostic, maxAdmissionDiagnostics+3)
	for i := range diags {
		diags[i] = render.Diagnostic{Rule: "r", Message: "m"}
	}
	err := refusal("EnvoyConfig a/b", diags)
	assert.Contains(t, err.Error(), "(13 error(s))")
	assert.Contains(t, err.Error(), "… and 3 more")
}
