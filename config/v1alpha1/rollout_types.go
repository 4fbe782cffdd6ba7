package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionProgressing is True while a rollout moves a new revision through
// its steps, with the step as its reason (Step2, WaitingForAnalysis, or
// RolloutPaused while it waits for a person) and why it waits as its
// message, and False once it ended (reason RolloutSucceeded, RolloutFailed,
// RolloutAborted, or RolloutSuperseded when newer content replaced the
// candidate without a rollout).
const ConditionProgressing = "Progressing"

// Reasons of the Progressing condition and of rollout events.
const (
	ReasonRolloutProgressing = "RolloutProgressing"
	ReasonRolloutPaused      = "RolloutPaused"
	ReasonRolloutSucceeded   = "RolloutSucceeded"
	ReasonRolloutFailed      = "RolloutFailed"
	ReasonRolloutAborted     = "RolloutAborted"
	ReasonRolloutSuperseded  = "RolloutSuperseded"
)

// RolloutAnnotation asks the leader to act on the object's rollout:
// promote (skip the current gate or pause), pause, resume or abort. It is
// removed once handled.
const RolloutAnnotation = "legate.dev/rollout"

// RolloutSpec is a progressive rollout policy: a new revision reaches the
// proxies step by step, each step gated, instead of every proxy at once.
// Without it, a new revision goes to every proxy, as before.
type RolloutSpec struct {
	// Steps run in order; each sets exactly one of proxies, nodes and
	// pause. After the last step the revision goes to every proxy.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=50
	// +listType=atomic
	Steps []RolloutStep `json:"steps"`
	// AckTimeout is how long every proxy of a step has to ACK the new
	// revision before the step fails.
	// +kubebuilder:default="30s"
	// +optional
	AckTimeout *metav1.Duration `json:"ackTimeout,omitempty"`
	// Soak is how long a step is watched, once its proxies ACKed, for
	// NACKs and restarts before its analysis runs.
	// +optional
	Soak *metav1.Duration `json:"soak,omitempty"`
	// MaxRestarts is how many times a proxy of the step may reconnect
	// during the step; one more and the revision counts as crashing it.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=2
	// +optional
	MaxRestarts *int32 `json:"maxRestarts,omitempty"`
	// Analysis runs after each proxies or nodes step's soak, with Argo
	// Rollouts' semantics.
	// +optional
	Analysis *RolloutAnalysis `json:"analysis,omitempty"`
	// OnFailure is rollback (every proxy back on the last good revision,
	// which is tainted) or pause (the canaries stay where they are until
	// promoted or aborted; a proxy that rejected the revision is served
	// the last good one either way).
	// +kubebuilder:validation:Enum=rollback;pause
	// +kubebuilder:default=rollback
	// +optional
	OnFailure string `json:"onFailure,omitempty"`
}

// RolloutStep is one step of a rollout.
// +kubebuilder:validation:XValidation:rule="[has(self.proxies), has(self.nodes), has(self.pause)].filter(x, x).size() == 1",message="a step sets exactly one of proxies, nodes and pause"
type RolloutStep struct {
	// Proxies is the share of each node's connected proxies that get the
	// new revision, chosen by a stable hash of each proxy's identity, e.g.
	// "10%" or "2.5%".
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9](\.[0-9]{1,2})?)%$`
	// +optional
	Proxies *string `json:"proxies,omitempty"`
	// Nodes selects whole nodes of the source: node ID globs
	// (["edge-canary-*"]), or a single share of the source's nodes
	// (["25%"]).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^([-a-z0-9.*?\[\]]+|(100|[1-9]?[0-9](\.[0-9]{1,2})?)%)$`
	// +kubebuilder:validation:XValidation:rule="self.size() == 1 || self.all(g, !g.endsWith('%'))",message="a share of nodes (\"25%\") stands alone in the list"
	// +listType=atomic
	// +optional
	Nodes []string `json:"nodes,omitempty"`
	// Pause waits for its duration, or, written {}, until
	// `kubectl annotate … legate.dev/rollout=promote`.
	// +optional
	Pause *RolloutPause `json:"pause,omitempty"`
}

// RolloutPause is a pause step.
type RolloutPause struct {
	// Duration of the pause; without it the rollout waits to be promoted.
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
}

// RolloutAnalysis is the analysis of each step, in the shape of
// rollout/analysis.Spec (the JSON of one is the JSON of the other).
type RolloutAnalysis struct {
	// Metrics are measured on their own schedules; the worst decides
	// (Failed, then Error, then Inconclusive, then Successful).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	// +listType=map
	// +listMapKey=name
	Metrics []AnalysisMetric `json:"metrics"`
}

// AnalysisMetric is one check repeated on a schedule, as an Argo Rollouts
// metric: exactly one of http and prometheus.
// +kubebuilder:validation:XValidation:rule="has(self.http) != has(self.prometheus)",message="a metric sets exactly one of http and prometheus"
// +kubebuilder:validation:XValidation:rule="!has(self.prometheus) || has(self.successCondition) || has(self.failureCondition)",message="a prometheus metric needs successCondition or failureCondition"
// +kubebuilder:validation:XValidation:rule="!has(self.http) || !(has(self.successCondition) || has(self.failureCondition))",message="an http metric answers pass, fail or inconclusive itself: successCondition and failureCondition apply to prometheus"
// +kubebuilder:validation:XValidation:rule="!has(self.count) || self.count <= 1 || has(self.interval)",message="interval is required when count is more than 1"
type AnalysisMetric struct {
	// Name identifies the metric in statuses and messages.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9_.]{0,61}[a-z0-9])?$`
	Name string `json:"name"`
	// InitialDelay waits before the first measurement.
	// +optional
	InitialDelay *metav1.Duration `json:"initialDelay,omitempty"`
	// Interval between two measurements.
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
	// Count is how many measurements are taken (1 by default); a gate
	// must end, so there is no unbounded count.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=120
	// +optional
	Count *int32 `json:"count,omitempty"`
	// FailureLimit: the metric fails when more measurements than this
	// failed (0 by default; -1: no limit).
	// +kubebuilder:validation:Minimum=-1
	// +kubebuilder:validation:Maximum=120
	// +optional
	FailureLimit *int32 `json:"failureLimit,omitempty"`
	// InconclusiveLimit: the metric is Inconclusive, and the rollout
	// pauses, when more measurements than this were inconclusive.
	// +kubebuilder:validation:Minimum=-1
	// +kubebuilder:validation:Maximum=120
	// +optional
	InconclusiveLimit *int32 `json:"inconclusiveLimit,omitempty"`
	// ConsecutiveErrorLimit: the metric is in Error when more
	// measurements than this in a row could not be taken (4 by default).
	// +kubebuilder:validation:Minimum=-1
	// +kubebuilder:validation:Maximum=120
	// +optional
	ConsecutiveErrorLimit *int32 `json:"consecutiveErrorLimit,omitempty"`
	// SuccessCondition is an expression over the Prometheus result, e.g.
	// "result[0] < 0.01" (see docs/rollout.md).
	// +kubebuilder:validation:MaxLength=512
	// +optional
	SuccessCondition string `json:"successCondition,omitempty"`
	// FailureCondition is the same for failure; it wins when both hold.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	FailureCondition string `json:"failureCondition,omitempty"`
	// HTTP POSTs {node, revision, commit, step, metric} and reads
	// {"result": "pass"|"fail"|"inconclusive", "message": "…"}.
	// +optional
	HTTP *HTTPAnalysis `json:"http,omitempty"`
	// Prometheus runs an instant query.
	// +optional
	Prometheus *PrometheusAnalysis `json:"prometheus,omitempty"`
}

// HTTPAnalysis is an HTTP check.
type HTTPAnalysis struct {
	// URL the check is POSTed to; redirects are followed only on the same
	// host.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^@/]+(/.*)?$`
	URL string `json:"url"`
	// Timeout of one request (10s by default, at most 5m).
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// Headers sent with each request.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	Headers []AnalysisHeader `json:"headers,omitempty"`
}

// PrometheusAnalysis is a Prometheus instant query.
type PrometheusAnalysis struct {
	// Address is the server's base URL, e.g. http://prometheus.monitoring:9090.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^@/]+(/.*)?$`
	Address string `json:"address"`
	// Query is PromQL; {{node}}, {{source}}, {{revision}}, {{commit}} and {{step}} are
	// replaced, escaped for a PromQL string.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Query string `json:"query"`
	// Timeout of one query (10s by default, at most 5m).
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// Headers sent with each query.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	Headers []AnalysisHeader `json:"headers,omitempty"`
}

// AnalysisHeader is one request header; a credential comes from a Secret
// of the object's namespace and never appears in a status or a log.
// +kubebuilder:validation:XValidation:rule="has(self.value) != has(self.valueFrom)",message="a header sets exactly one of value and valueFrom"
type AnalysisHeader struct {
	// +kubebuilder:validation:Pattern="^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$"
	Name string `json:"name"`
	// Value is sent as it is; not for credentials.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Value string `json:"value,omitempty"`
	// ValueFrom reads the value from a Secret of the object's namespace.
	// +optional
	ValueFrom *AnalysisHeaderSource `json:"valueFrom,omitempty"`
}

// AnalysisHeaderSource says where a header's value is read.
type AnalysisHeaderSource struct {
	// SecretKeyRef is one key of a Secret in the object's namespace.
	SecretKeyRef AnalysisSecretKeyRef `json:"secretKeyRef"`
}

// AnalysisSecretKeyRef is one key of a Secret of the object's namespace.
type AnalysisSecretKeyRef struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// RolloutStatus is where the rollout of the newest revision stands.
type RolloutStatus struct {
	// Phase is Progressing, Paused (at an untimed pause, after an
	// inconclusive analysis or a failure under onFailure: pause, or by a
	// pause command), Succeeded, Failed or Aborted.
	// +optional
	Phase string `json:"phase,omitempty"`
	// Step is the 1-based step in progress; once the rollout ended, the
	// step it ended at (the failed one after a failure).
	// +optional
	Step int32 `json:"step,omitempty"`
	// Total is the number of steps.
	// +optional
	Total int32 `json:"total,omitempty"`
	// Revision is the version being rolled out (a revision's short hash,
	// as desiredVersion); StableRevision the one the other proxies keep.
	// +optional
	Revision string `json:"revision,omitempty"`
	// +optional
	StableRevision string `json:"stableRevision,omitempty"`
	// Commit the rolled-out revision came from.
	// +optional
	Commit string `json:"commit,omitempty"`
	// StartedAt is when this rollout started (a newer commit restarts it).
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// StepStartedAt is when the current step started.
	// +optional
	StepStartedAt *metav1.Time `json:"stepStartedAt,omitempty"`
	// Gate is what the step waits for: ack (every proxy of the step to
	// ACK), soak, analysis, pause (a timed one), nodes (the nodes an
	// earlier nodes step takes) or promote (a person).
	// +optional
	Gate string `json:"gate,omitempty"`
	// Message says why it waits or failed, naming the step, the proxy and
	// its text (cut at 1 KiB), or the analysis metric.
	// +optional
	Message string `json:"message,omitempty"`
	// Proxies counts the connected proxies on each side.
	// +optional
	Proxies *RolloutProxies `json:"proxies,omitempty"`
	// Analysis is the last analysis verdict: its phase and message.
	// +optional
	Analysis *RolloutAnalysisStatus `json:"analysis,omitempty"`
}

// RolloutProxies counts proxies by the revision they are served.
type RolloutProxies struct {
	// New is served the revision being rolled out.
	New int32 `json:"new"`
	// Old is served the stable revision.
	Old int32 `json:"old"`
}

// RolloutAnalysisStatus is an analysis verdict.
type RolloutAnalysisStatus struct {
	// Phase is Successful, Failed, Inconclusive or Error.
	Phase string `json:"phase"`
	// +optional
	Message string `json:"message,omitempty"`
}
