package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// stubMutator stands in for the Injector in the server's own tests (the
// Injector has its own; test/controller runs both behind a real API
// server).
type stubMutator func(*corev1.Pod) (Sidecar, bool, error)

func (f stubMutator) Inject(p *corev1.Pod) (Sidecar, bool, error) { return f(p) }

type issued struct {
	namespace, secret, node string
	dryRun                  bool
}

type recordingIssuer struct {
	calls []issued
	err   error
}

func (r *recordingIssuer) EnsureProxy(_ context.Context, namespace, secret, node string, dryRun bool) error {
	r.calls = append(r.calls, issued{namespace, secret, node, dryRun})
	return r.err
}

func addSidecar(p *corev1.Pod) (Sidecar, bool, error) {
	if !Wants(p.Labels) {
		return Sidecar{}, false, nil
	}
	p.Spec.InitContainers = append([]corev1.Container{{Name: "envoy-sidecar", Image: "envoy"}}, p.Spec.InitContainers...)
	return Sidecar{NodeID: "edge"}, true, nil
}

func review(t testing.TB, req *admissionv1.AdmissionRequest) []byte {
	t.Helper()
	data, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
	require.NoError(t, err)
	return data
}

func podRequest(t testing.TB, pod *corev1.Pod, dryRun bool) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(pod)
	require.NoError(t, err)
	return &admissionv1.AdmissionRequest{
		UID: types.UID("uid-1"), Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Namespace: "shop", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}, DryRun: &dryRun,
	}
}

func post(t testing.TB, h http.Handler, path, contentType string, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	r.Header.Set("Content-Type", contentType)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func answerOf(t *testing.T, w *httptest.ResponseRecorder) *admissionv1.AdmissionResponse {
	t.Helper()
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var out admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &out))
	require.NotNil(t, out.Response)
	assert.Equal(t, types.UID("uid-1"), out.Response.UID, "the answer carries the request's UID")
	return out.Response
}

func pod(labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "web-", Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
}

// The patch the server answers turns the Pod it was sent into the Pod the
// mutator made, and the proxy's certificate is checked (a dry run, even
// when the request is not one: the controller issues it for stored pods
// only) in the request's namespace.
func TestMutatePodAnswersAPatchAndIssuesTheCertificate(t *testing.T) {
	for _, dryRun := range []bool{false, true} {
		issuer := &recordingIssuer{}
		s := &Server{Mutator: stubMutator(addSidecar), Issuer: issuer, Log: logr.Discard()}
		p := pod(map[string]string{InjectLabel: Enabled})
		req := podRequest(t, p, dryRun)
		resp := answerOf(t, post(t, s.Handler(), MutatePodsPath, "application/json", review(t, req)))
		require.True(t, resp.Allowed)
		require.NotNil(t, resp.PatchType)
		patch, err := jsonpatch.DecodePatch(resp.Patch)
		require.NoError(t, err)
		patched, err := patch.Apply(req.Object.Raw)
		require.NoError(t, err)
		var got corev1.Pod
		require.NoError(t, json.Unmarshal(patched, &got))
		want := p.DeepCopy()
		_, _, _ = addSidecar(want)
		assert.Equal(t, want.Spec, got.Spec)
		assert.Equal(t, []issued{{"shop", (Sidecar{NodeID: "edge"}).SecretName(), "edge", true}}, issuer.calls)
	}
}

// Pods that do not ask, and operations other than a creation, pass
// untouched and issue nothing.
func TestMutatePodLeavesOthersAlone(t *testing.T) {
	issuer := &recordingIssuer{}
	s := &Server{Mutator: stubMutator(addSidecar), Issuer: issuer, Log: logr.Discard()}
	resp := answerOf(t, post(t, s.Handler(), MutatePodsPath, "application/json", review(t, podRequest(t, pod(nil), false))))
	assert.True(t, resp.Allowed)
	assert.Nil(t, resp.Patch)

	req := podRequest(t, pod(map[string]string{InjectLabel: Enabled}), false)
	req.Operation = admissionv1.Update
	resp = answerOf(t, post(t, s.Handler(), MutatePodsPath, "application/json", review(t, req)))
	assert.True(t, resp.Allowed)
	assert.Nil(t, resp.Patch)
	assert.Empty(t, issuer.calls)
}

// A refusal says why in the message kubectl prints, and a panic inside
// the mutator refuses that Pod instead of taking the server down.
func TestMutatePodRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		mutator stubMutator
		issuer  error
		code    int32
		want    string
	}{
		"bad annotation": {
			mutator: func(*corev1.Pod) (Sidecar, bool, error) {
				return Sidecar{}, false, errors.New("annotation legate.dev/ports: bad")
			},
			code: http.StatusUnprocessableEntity, want: "legate cannot inject an Envoy sidecar into Pod shop/web-*: annotation legate.dev/ports: bad",
		},
		"certificate": {
			mutator: addSidecar, issuer: errors.New("Secret shop/x holds the certificate of node other"),
			code: http.StatusUnprocessableEntity, want: `the client certificate of node "edge": Secret shop/x holds the certificate of node other`,
		},
		"panic": {
			mutator: func(*corev1.Pod) (Sidecar, bool, error) { panic("boom") },
			code:    http.StatusInternalServerError, want: "a legate bug",
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := &Server{Mutator: tc.mutator, Issuer: &recordingIssuer{err: tc.issuer}, Log: logr.Discard()}
			p := pod(map[string]string{InjectLabel: Enabled})
			resp := answerOf(t, post(t, s.Handler(), MutatePodsPath, "application/json", review(t, podRequest(t, p, false))))
			assert.False(t, resp.Allowed)
			require.NotNil(t, resp.Result)
			assert.Equal(t, tc.code, resp.Result.Code)
			assert.Contains(t, resp.Result.Message, tc.want)
			assert.Nil(t, resp.Patch)
		})
	}
}

// The validators run on creations and on updates that change the spec,
// not on metadata-only updates or deletions.
func TestValidatingRunsOnSpecChangesOnly(t *testing.T) {
	calls := 0
	s := &Server{EnvoyConfigs: func(context.Context, *admissionv1.AdmissionRequest) error {
		calls++
		return errors.New("EnvoyConfig default/edge is refused: cluster \"x\" connect_timeout: negative")
	}, Log: logr.Discard()}
	obj := func(spec string) runtime.RawExtension {
		return runtime.RawExtension{Raw: []byte(`{"metadata":{"name":"edge"},"spec":` + spec + `}`)}
	}
	for _, tc := range []struct {
		name     string
		op       admissionv1.Operation
		obj, old runtime.RawExtension
		allowed  bool
		calls    int
	}{
		{"create", admissionv1.Create, obj(`{"nodeID":"a"}`), runtime.RawExtension{}, false, 1},
		{"spec edit", admissionv1.Update, obj(`{"nodeID":"b"}`), obj(`{"nodeID":"a"}`), false, 1},
		{"relabel", admissionv1.Update, obj(`{"nodeID": "a"}`), obj(`{"nodeID":"a"}`), true, 0},
		{"delete", admissionv1.Delete, runtime.RawExtension{}, obj(`{}`), true, 0},
	} {
		calls = 0
		req := &admissionv1.AdmissionRequest{UID: "uid-1", Operation: tc.op, Object: tc.obj, OldObject: tc.old}
		resp := answerOf(t, post(t, s.Handler(), ValidateEnvoyConfigsPath, "application/json", review(t, req)))
		assert.Equal(t, tc.allowed, resp.Allowed, tc.name)
		assert.Equal(t, tc.calls, calls, tc.name)
		if !tc.allowed {
			assert.Contains(t, resp.Result.Message, "connect_timeout: negative", tc.name)
		}
	}
}

// What is not an AdmissionReview is answered with an HTTP error, never a
// verdict and never a panic.
func TestMalformedReviews(t *testing.T) {
	s := &Server{Mutator: stubMutator(addSidecar), Log: logr.Discard()}
	h := s.Handler()
	get := httptest.NewRecorder()
	h.ServeHTTP(get, httptest.NewRequest(http.MethodGet, MutatePodsPath, nil))
	assert.Equal(t, http.StatusMethodNotAllowed, get.Code)
	assert.Equal(t, http.StatusUnsupportedMediaType, post(t, h, MutatePodsPath, "text/plain", []byte(`{}`)).Code)
	big := append([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"`), bytes.Repeat([]byte("a"), MaxReviewBytes)...)
	assert.Equal(t, http.StatusRequestEntityTooLarge, post(t, h, MutatePodsPath, "application/json", big).Code)
	deep := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","object":` + strings.Repeat(`{"a":`, 100000)
	for _, body := range []string{``, `null`, `[]`, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, `{"apiVersion":"v1","kind":"Pod"}`, deep} {
		w := post(t, h, MutatePodsPath, "application/json", []byte(body))
		assert.Equal(t, http.StatusBadRequest, w.Code, body[:min(len(body), 80)])
		assert.True(t, strings.HasPrefix(w.Body.String(), "malformed AdmissionReview"), w.Body.String()[:min(w.Body.Len(), 200)])
	}
	// A Pod that does not decode is refused as a bad request.
	req := &admissionv1.AdmissionRequest{UID: "uid-1", Kind: metav1.GroupVersionKind{Kind: "Pod"}, Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(`{"spec":{"containers":"x"}}`)}}
	resp := answerOf(t, post(t, h, MutatePodsPath, "application/json", review(t, req)))
	assert.False(t, resp.Allowed)
	assert.Equal(t, int32(http.StatusBadRequest), resp.Result.Code)
}

// FuzzAdmissionReview sends arbitrary bodies to every path: the answer is
// an HTTP error or a verdict, and the server never panics.
func FuzzAdmissionReview(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","kind":{"kind":"Pod"},"operation":"CREATE","object":{"metadata":{"labels":{"legate.dev/inject":"enabled"}}}}}`))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","operation":"UPDATE","object":{"spec":1},"oldObject":{"spec":[]}}}`))
	validate := func(context.Context, *admissionv1.AdmissionRequest) error { return nil }
	s := &Server{Mutator: stubMutator(addSidecar), Issuer: &recordingIssuer{}, EnvoyConfigs: validate, EnvoySources: validate, Log: logr.Discard()}
	h := s.Handler()
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, path := range []string{MutatePodsPath, ValidateEnvoyConfigsPath} {
			w := post(t, h, path, "application/json", body)
			if w.Code != http.StatusOK && w.Code != http.StatusBadRequest && w.Code != http.StatusRequestEntityTooLarge {
				t.Fatalf("%s answered %d: %s", path, w.Code, w.Body.String())
			}
		}
	})
}

// BenchmarkAdmitPod times the webhook's own work on one Pod (decode the
// review, inject, compute the patch, encode the answer) with the real
// Injector, beside, in the same run, a Pod that does not ask (decode and
// answer only: the baseline). The API server's round trip is in
// test/bench/kube's BenchmarkAdmission.
func BenchmarkAdmitPod(b *testing.B) {
	s := &Server{Mutator: Injector{XDSAddress: "legate-xds.legate-system.svc:18000"}, Log: logr.Discard()}
	h := s.Handler()
	asks := pod(map[string]string{InjectLabel: Enabled, "app": "web"})
	asks.Annotations = map[string]string{"legate.dev/node-id": "web", "legate.dev/ports": "http:8443"}
	bodies := map[string][]byte{
		"injected": review(b, podRequest(b, asks, false)),
		"plain":    review(b, podRequest(b, pod(map[string]string{"app": "web"}), false)),
	}
	lat := map[string][]time.Duration{}
	b.ResetTimer()
	for range b.N {
		for _, name := range []string{"injected", "plain"} {
			start := time.Now()
			w := post(b, h, MutatePodsPath, "application/json", bodies[name])
			lat[name] = append(lat[name], time.Since(start))
			if w.Code != http.StatusOK {
				b.Fatalf("%s: %d %s", name, w.Code, w.Body.String())
			}
		}
	}
	b.StopTimer()
	for name, l := range lat {
		slices.Sort(l)
		b.ReportMetric(float64(l[len(l)/2])/1e3, name+"-p50-µs")
		b.ReportMetric(float64(l[len(l)*99/100])/1e3, name+"-p99-µs")
	}
}

// A Pod from an API server newer than legate's k8s.io/api carries fields
// legate's types drop when they decode it: the patch must leave them, not
// remove them, while it still injects.
func TestMutatePodKeepsFieldsItDoesNotKnow(t *testing.T) {
	s := &Server{Mutator: stubMutator(addSidecar), Log: logr.Discard()}
	req := podRequest(t, pod(map[string]string{InjectLabel: Enabled}), false)
	var obj map[string]any
	require.NoError(t, json.Unmarshal(req.Object.Raw, &obj))
	obj["spec"].(map[string]any)["futureField"] = map[string]any{"mode": "x"}
	obj["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["futureContainerField"] = true
	obj["futureTopLevel"] = "y"
	raw, err := json.Marshal(obj)
	require.NoError(t, err)
	req.Object.Raw = raw

	resp := answerOf(t, post(t, s.Handler(), MutatePodsPath, "application/json", review(t, req)))
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.NotContains(t, string(resp.Patch), `"remove"`)
	patch, err := jsonpatch.DecodePatch(resp.Patch)
	require.NoError(t, err)
	patched, err := patch.Apply(raw)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(patched, &got))
	spec := got["spec"].(map[string]any)
	assert.Equal(t, map[string]any{"mode": "x"}, spec["futureField"])
	assert.Equal(t, true, spec["containers"].([]any)[0].(map[string]any)["futureContainerField"])
	assert.Equal(t, "y", got["futureTopLevel"])
	var typed corev1.Pod
	require.NoError(t, json.Unmarshal(patched, &typed))
	want := pod(map[string]string{InjectLabel: Enabled})
	_, _, _ = addSidecar(want)
	assert.Equal(t, want.Spec, typed.Spec, "the sidecar is still injected")
}
