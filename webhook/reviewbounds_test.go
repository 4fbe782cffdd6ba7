package webhook

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestJSONValuesCountsFromTheStructure(t *testing.T) {
	for _, tc := range []struct {
		json string
		want int
	}{
		{``, 0},
		{`1`, 1},
		{`{"a":1}`, 3},
		{`[1,2,3]`, 4},
		{`{"a":[true,null],"b":{"c":"d"}}`, 9},
		{`"a,b:{[c"`, 1},
		{`["a\",b", "\\", ","]`, 4},
	} {
		assert.Equal(t, tc.want, jsonValues([]byte(tc.json), 100), tc.json)
	}
	assert.Equal(t, 11, jsonValues([]byte("["+strings.Repeat("0,", 1000)+"0]"), 10), "stops past the limit")
}

// An object of more values than legate admits is refused by name before
// any validator decodes or renders it: an 8 MiB review of tiny values
// would cost the renderer gigabytes.
func TestObjectOverTheValueBoundIsRefused(t *testing.T) {
	calls := 0
	s := &Server{EnvoyConfigs: func(context.Context, *admissionv1.AdmissionRequest) error {
		calls++
		return nil
	}, Log: logr.Discard()}
	obj := func(n int) runtime.RawExtension {
		return runtime.RawExtension{Raw: []byte(`{"metadata":{"name":"big"},"spec":{"nodeID":"edge","resources":[{"type":"cluster","value":{"name":"c","metadata":{"filter_metadata":{"x":{"v":[` +
			strings.TrimSuffix(strings.Repeat("0,", n), ",") + `]}}}}}]}}`)}
	}
	req := &admissionv1.AdmissionRequest{UID: "uid-1", Kind: metav1.GroupVersionKind{Kind: "EnvoyConfig"}, Namespace: "team-b", Name: "big", Operation: admissionv1.Create, Object: obj(MaxObjectValues)}
	resp := answerOf(t, post(t, s.Handler(), ValidateEnvoyConfigsPath, "application/json", review(t, req)))
	require.False(t, resp.Allowed)
	assert.Equal(t, int32(http.StatusUnprocessableEntity), resp.Result.Code)
	assert.Equal(t, "EnvoyConfig team-b/big holds more than 100000 JSON values (keys, values and list items), over what legate admits in one object: split it into several", resp.Result.Message)
	assert.Zero(t, calls, "the validator never saw it")

	req.Object = obj(MaxObjectValues - 30)
	resp = answerOf(t, post(t, s.Handler(), ValidateEnvoyConfigsPath, "application/json", review(t, req)))
	assert.True(t, resp.Allowed, "just under the bound: %v", resp.Result)
	assert.Equal(t, 1, calls)
}
