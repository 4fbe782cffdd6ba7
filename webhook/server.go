package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The paths the API server calls (config/webhook registers them).
const (
	MutatePodsPath           = "/mutate-pods"
	ValidateEnvoyConfigsPath = "/validate-envoyconfigs"
	ValidateEnvoySourcesPath = "/validate-envoysources"
)

// The webhook configurations of config/webhook, whose caBundle legate's
// own PKI fills in (pki/kubepki.CABundle).
const (
	InjectorConfiguration   = "legate-sidecar-injector"
	ValidationConfiguration = "legate-validation"
)

// MaxReviewBytes bounds an AdmissionReview's body: the API server stores
// objects up to 3 MiB (etcd's default request size limit) and a review of
// an update carries the object twice.
const MaxReviewBytes = 8 << 20

// PodMutator injects the sidecar a Pod asks for (Injector).
type PodMutator interface {
	// Inject mutates pod in place and reports whether it injected; it
	// leaves pod untouched when it returns an error or false.
	Inject(pod *corev1.Pod) (Sidecar, bool, error)
}

// ProxyIssuer makes sure the Secret holding a proxy's client certificate
// exists for its node ID; with dryRun it only says whether it could
// (pki/kubepki.Authority, behind the controller's check that the node ID
// may be served to that namespace).
type ProxyIssuer interface {
	EnsureProxy(ctx context.Context, namespace, secretName, nodeID string, dryRun bool) error
}

// Validator judges one object of legate's own kinds at admission; an error
// refuses it, its text is what kubectl prints.
type Validator func(ctx context.Context, req *admissionv1.AdmissionRequest) error

// Server answers the API server's admission calls: it injects sidecars
// into Pods and validates EnvoyConfigs and EnvoySources. A malformed review
// is answered 400, never a panic; a failure inside legate refuses the
// object (the webhook's failurePolicy decides what the API server does
// when legate does not answer at all).
type Server struct {
	Mutator PodMutator
	// Issuer, when set, checks at admission that each injected proxy's
	// client certificate can be issued (a dry run: the controller issues
	// it once the pod is stored); without it the pods mount Secrets
	// someone else provides (cert-manager, for example).
	Issuer ProxyIssuer
	// EnvoyConfigs and EnvoySources validate legate's objects (nil: the
	// path answers 404).
	EnvoyConfigs, EnvoySources Validator
	// Ready, when set, is waited for before a review is decided, within
	// the review's deadline, and reports whether it came in time. A home
	// that has just started reads its policies, tenancy and node claims
	// from caches that are still filling: a review decided then would be
	// refused for a read that fails ("the cache is not started"), not for
	// the object.
	Ready func(ctx context.Context) bool
	Log   logr.Logger

	duration    *prometheus.HistogramVec
	connections prometheus.Counter
}

// Register adds the server's admission metrics to reg.
func (s *Server) Register(reg prometheus.Registerer) error {
	s.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "legate_admission_duration_seconds",
		Help:    "Time legate's admission webhooks took to answer, by webhook and verdict.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1, 5},
	}, []string{"webhook", "allowed"})
	// A count that grows with the calls says the API server's connections
	// are not kept alive: each call then pays a TCP and TLS handshake
	// that legate_admission_duration_seconds does not show.
	s.connections = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "legate_admission_connections_total",
		Help: "Connections opened to legate's admission webhooks (each a TLS handshake).",
	})
	return errors.Join(reg.Register(s.duration), reg.Register(s.connections))
}

// Handler serves the webhooks' paths.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	if s.Mutator != nil {
		mux.Handle(MutatePodsPath, s.review("pods", s.mutatePod))
	}
	if s.EnvoyConfigs != nil {
		mux.Handle(ValidateEnvoyConfigsPath, s.review("envoyconfigs", validating(s.EnvoyConfigs)))
	}
	if s.EnvoySources != nil {
		mux.Handle(ValidateEnvoySourcesPath, s.review("envoysources", validating(s.EnvoySources)))
	}
	return mux
}

// answer decides one admission request.
type answer func(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse

// review decodes the AdmissionReview, runs decide and writes its verdict.
func (s *Server) review(name string, decide answer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "an AdmissionReview is POSTed", http.StatusMethodNotAllowed)
			return
		}
		if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || ct != "application/json" {
			http.Error(w, "an AdmissionReview is sent as application/json", http.StatusUnsupportedMediaType)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxReviewBytes))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, fmt.Sprintf("the AdmissionReview is larger than %d bytes", MaxReviewBytes), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "read the AdmissionReview: "+err.Error(), http.StatusBadRequest)
			return
		}
		in, err := decodeReview(body)
		if err != nil {
			http.Error(w, "malformed AdmissionReview: "+err.Error(), http.StatusBadRequest)
			return
		}
		var resp *admissionv1.AdmissionResponse
		if err := objectBounds(in.Request); err != nil {
			resp = deny(http.StatusUnprocessableEntity, err.Error())
		} else {
			// The request's context lasts as long as its client keeps
			// the connection: the review is bounded by the API server's
			// own timeout instead, counted from its arrival.
			ctx, cancel := context.WithDeadline(withPeer(r.Context(), r), start.Add(reviewTimeout(r)))
			if s.Ready != nil && !s.Ready(ctx) {
				resp = deny(http.StatusServiceUnavailable, notReady)
			} else {
				resp = s.decideSafely(ctx, name, in.Request, decide)
			}
			cancel()
		}
		resp.UID = in.Request.UID
		out := admissionv1.AdmissionReview{TypeMeta: in.TypeMeta, Response: resp}
		data, err := json.Marshal(out)
		if err != nil {
			http.Error(w, "encode the AdmissionReview", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(data)
		if s.duration != nil {
			s.duration.WithLabelValues(name, fmt.Sprint(resp.Allowed)).Observe(time.Since(start).Seconds())
		}
	})
}

// notReady is the refusal of a review that came before the home could
// decide it (Server.Ready) and waited past its deadline.
const notReady = "legate has just started and cannot decide yet: its copies of the cluster's objects (policies, tenancy, node claims) are still being read; apply again in a moment"

// decodeReview reads an admission.k8s.io/v1 AdmissionReview that carries a
// request with a UID and an object.
func decodeReview(body []byte) (*admissionv1.AdmissionReview, error) {
	var in admissionv1.AdmissionReview
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&in); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("data after the review")
	}
	switch {
	case in.APIVersion != admissionv1.SchemeGroupVersion.String() || in.Kind != "AdmissionReview":
		return nil, fmt.Errorf("want apiVersion %s and kind AdmissionReview, got %q and %q", admissionv1.SchemeGroupVersion, in.APIVersion, in.Kind)
	case in.Request == nil:
		return nil, errors.New("no request")
	case in.Request.UID == "":
		return nil, errors.New("request.uid is empty")
	}
	return &in, nil
}

// decideSafely runs decide and turns a panic into a refusal: one bad
// object must not take down the webhook for every other.
func (s *Server) decideSafely(ctx context.Context, name string, req *admissionv1.AdmissionRequest, decide answer) (resp *admissionv1.AdmissionResponse) {
	defer func() {
		if v := recover(); v != nil {
			s.Log.Error(fmt.Errorf("panic: %v", v), "admission webhook failed", "webhook", name, "kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name)
			resp = deny(http.StatusInternalServerError, "legate's admission webhook failed on this object (a legate bug; its log says more)")
		}
	}()
	return decide(ctx, req)
}

// validating answers with v's verdict on creations and on updates that
// change the spec: an update of labels, annotations or finalizers of an
// object that the policies in force no longer accept must not be blocked
// (it would keep it from being deleted).
func validating(v Validator) answer {
	return func(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		switch req.Operation {
		case admissionv1.Create:
		case admissionv1.Update:
			same, err := sameSpec(req.Object.Raw, req.OldObject.Raw)
			if err != nil {
				return deny(http.StatusBadRequest, err.Error())
			}
			if same {
				return allow()
			}
		default:
			return allow()
		}
		if err := v(ctx, req); err != nil {
			return deny(http.StatusUnprocessableEntity, err.Error())
		}
		return allow()
	}
}

// sameSpec reports whether two objects' specs are equal.
func sameSpec(obj, old []byte) (bool, error) {
	var a, b struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(obj, &a); err != nil {
		return false, fmt.Errorf("object: %w", err)
	}
	if err := json.Unmarshal(old, &b); err != nil {
		return false, fmt.Errorf("oldObject: %w", err)
	}
	var ca, cb bytes.Buffer
	if len(a.Spec) > 0 {
		if err := json.Compact(&ca, a.Spec); err != nil {
			return false, err
		}
	}
	if len(b.Spec) > 0 {
		if err := json.Compact(&cb, b.Spec); err != nil {
			return false, err
		}
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes()), nil
}

// mutatePod injects the sidecar a Pod asks for and checks that its
// proxy's certificate can be issued.
func (s *Server) mutatePod(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req.Kind.Kind != "Pod" || req.Operation != admissionv1.Create {
		return allow()
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return deny(http.StatusBadRequest, "decode the Pod: "+err.Error())
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	// The patch is the difference between the Pod as legate's types know
	// it before and after the injection, not from the request's JSON: a
	// field this build does not know (an API server newer than its
	// k8s.io/api) is missing from both, so the patch leaves it alone
	// instead of removing it.
	original, err := json.Marshal(&pod)
	if err != nil {
		return deny(http.StatusInternalServerError, "encode the Pod: "+err.Error())
	}
	sidecar, injected, err := s.Mutator.Inject(&pod)
	if err != nil {
		return deny(http.StatusUnprocessableEntity, fmt.Sprintf("legate cannot inject an Envoy sidecar into Pod %s: %v", podName(&pod), err))
	}
	if !injected {
		return allow()
	}
	if s.Issuer != nil {
		// Only a check: the controller issues the certificate once the
		// API server has stored the pod (ProxyLabel), so that nothing is
		// written for a review that did not come from the API server, a
		// dry run, or a pod a later admission step refuses.
		if err := s.Issuer.EnsureProxy(ctx, req.Namespace, sidecar.SecretName(), sidecar.NodeID, true); err != nil {
			return deny(http.StatusUnprocessableEntity, fmt.Sprintf("Pod %s: the client certificate of node %q: %v", podName(&pod), sidecar.NodeID, err))
		}
	}
	mutated, err := json.Marshal(&pod)
	if err != nil {
		return deny(http.StatusInternalServerError, "encode the injected Pod: "+err.Error())
	}
	patch, err := jsonpatch.CreatePatch(original, mutated)
	if err != nil {
		return deny(http.StatusInternalServerError, "compute the Pod's patch: "+err.Error())
	}
	if len(patch) == 0 {
		return allow()
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return deny(http.StatusInternalServerError, "encode the Pod's patch: "+err.Error())
	}
	pt := admissionv1.PatchTypeJSONPatch
	resp := allow()
	resp.Patch, resp.PatchType = data, &pt
	return resp
}

// podName is how a Pod is named in messages: pods of a Deployment have
// only a generateName at admission.
func podName(pod *corev1.Pod) string {
	name := pod.Name
	if name == "" {
		name = pod.GenerateName + "*"
	}
	if pod.Namespace == "" {
		return name
	}
	return pod.Namespace + "/" + name
}

func allow() *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: true}
}

func deny(code int32, msg string) *admissionv1.AdmissionResponse {
	reason := map[int32]metav1.StatusReason{
		http.StatusBadRequest:          metav1.StatusReasonBadRequest,
		http.StatusUnprocessableEntity: metav1.StatusReasonInvalid,
	}[code]
	if reason == "" {
		reason = metav1.StatusReasonInternalError
	}
	return &admissionv1.AdmissionResponse{Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: code, Message: msg, Reason: reason,
	}}
}
