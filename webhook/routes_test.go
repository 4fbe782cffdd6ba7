package webhook

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Each validator is served at its own path, and only when it is given.
func TestEachValidatorHasItsPath(t *testing.T) {
	refuse := func(kind string) Validator {
		return func(context.Context, *admissionv1.AdmissionRequest) error { return errors.New(kind + " refused") }
	}
	req := &admissionv1.AdmissionRequest{
		UID: "uid-1", Kind: metav1.GroupVersionKind{Kind: "EnvoySource"}, Namespace: "team-a", Name: "cfg", Operation: admissionv1.Create,
		Object: runtime.RawExtension{Raw: []byte(`{"metadata":{"name":"cfg"}}`)},
	}
	both := &Server{EnvoyConfigs: refuse("EnvoyConfig"), EnvoySources: refuse("EnvoySource"), Log: logr.Discard()}
	for path, want := range map[string]string{ValidateEnvoyConfigsPath: "EnvoyConfig refused", ValidateEnvoySourcesPath: "EnvoySource refused"} {
		resp := answerOf(t, post(t, both.Handler(), path, "application/json", review(t, req)))
		assert.False(t, resp.Allowed, path)
		assert.Contains(t, resp.Result.Message, want, path)
	}
	none := &Server{Log: logr.Discard()}
	for _, path := range []string{ValidateEnvoyConfigsPath, ValidateEnvoySourcesPath, MutatePodsPath} {
		assert.Equal(t, http.StatusNotFound, post(t, none.Handler(), path, "application/json", review(t, req)).Code, path)
	}
}

// An object of exactly MaxObjectValues values is admitted; one more is
// refused.
func TestObjectBoundIsInclusive(t *testing.T) {
	// "[0,…,0]" with m zeros counts m+1 values: the list and its items.
	list := func(values int) *admissionv1.AdmissionRequest {
		raw := "[" + strings.TrimSuffix(strings.Repeat("0,", values-1), ",") + "]"
		return &admissionv1.AdmissionRequest{Kind: metav1.GroupVersionKind{Kind: "EnvoyConfig"}, Name: "big", Object: runtime.RawExtension{Raw: []byte(raw)}}
	}
	assert.NoError(t, objectBounds(list(MaxObjectValues)))
	assert.ErrorContains(t, objectBounds(list(MaxObjectValues+1)), "EnvoyConfig big holds more than 100000 JSON values")
}

// Specs are compared as JSON, whitespace aside; objects without one have
// the same (none).
func TestSameSpec(t *testing.T) {
	for _, tc := range []struct {
		obj, old string
		same     bool
	}{
		{`{"spec":{"a":1,"b":[1,2]}}`, `{"spec": {"a": 1, "b": [1, 2]}, "status": {}}`, true},
		{`{"spec":{"a":1}}`, `{"spec":{"a":2}}`, false},
		{`{"metadata":{"name":"x"}}`, `{"metadata":{"name":"y"}}`, true},
		{`{"spec":{}}`, `{"metadata":{}}`, false},
		{`{"metadata":{}}`, `{"spec":{}}`, false},
	} {
		same, err := sameSpec([]byte(tc.obj), []byte(tc.old))
		if assert.NoError(t, err, tc.obj) {
			assert.Equal(t, tc.same, same, "%s vs %s", tc.obj, tc.old)
		}
	}
}

// A refusal carries the reason its code means to the API server.
func TestDenyReason(t *testing.T) {
	for code, want := range map[int32]metav1.StatusReason{
		http.StatusBadRequest:          metav1.StatusReasonBadRequest,
		http.StatusUnprocessableEntity: metav1.StatusReasonInvalid,
		http.StatusInternalServerError: metav1.StatusReasonInternalError,
	} {
		resp := deny(code, "no")
		assert.False(t, resp.Allowed)
		assert.Equal(t, want, resp.Result.Reason, code)
		assert.Equal(t, code, resp.Result.Code)
	}
}
