package envoydeployment

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
)

// Reasons of the Ready condition, Flux's where Flux has one
// (github.com/fluxcd/pkg/apis/meta).
const (
	ReasonSucceeded = "Succeeded"
	// ReasonProgressing: the workload rolls out its pods.
	ReasonProgressing = "Progressing"
	// ReasonNotServed: no revision of the node is published yet.
	ReasonNotServed = "ConfigNotServed"
	// ReasonEnvoyConfigNotFound: spec.envoyConfigRef names no EnvoyConfig.
	ReasonEnvoyConfigNotFound = "EnvoyConfigNotFound"
	// ReasonInvalidRef: spec.envoyConfigRef names another namespace.
	ReasonInvalidRef = "InvalidEnvoyConfigRef"
	// ReasonInvalidSpec: the spec cannot be built (the message names the
	// field).
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonObjectConflict: an object of a generated object's name exists
	// and is not this EnvoyDeployment's.
	ReasonObjectConflict = "ObjectConflict"
	// ReasonCertificateRefused: legate's PKI does not issue the proxies'
	// certificate (the node is another namespace's).
	ReasonCertificateRefused = "CertificateRefused"
	// ReasonApplyFailed: the API server refused a generated object.
	ReasonApplyFailed = "ApplyFailed"
)

// rollout is what a Deployment's or DaemonSet's status says of its pods.
type rollout struct {
	kind                    string
	desired, ready, updated int32
	done                    bool
}

// rolloutOf reads the status of a workload as the API server returned it.
func rolloutOf(obj client.Object) rollout {
	switch w := obj.(type) {
	case *appsv1.Deployment:
		r := rollout{kind: "Deployment", desired: ptr.Deref(w.Spec.Replicas, 1), ready: w.Status.ReadyReplicas, updated: w.Status.UpdatedReplicas}
		r.done = w.Status.ObservedGeneration >= w.Generation && r.updated == r.desired && r.ready >= r.desired && w.Status.Replicas == r.desired
		return r
	case *appsv1.DaemonSet:
		r := rollout{kind: "DaemonSet", desired: w.Status.DesiredNumberScheduled, ready: w.Status.NumberReady, updated: w.Status.UpdatedNumberScheduled}
		r.done = w.Status.ObservedGeneration >= w.Generation && r.updated == r.desired && r.ready >= r.desired
		return r
	}
	return rollout{}
}

// verdict is the Ready condition's status, reason and message.
type verdict struct {
	status  metav1.ConditionStatus
	reason  string
	message string
	// stalled: the user must act (Stalled True); else legate is still
	// working (Reconciling True) unless Ready.
	stalled bool
}

// judge decides Ready from the rollout and the revision served the node.
func judge(r rollout, served *v1alpha1.ServedRevision) verdict {
	switch {
	case served == nil:
		return verdict{
			status: metav1.ConditionFalse, reason: ReasonNotServed,
			message: "legate publishes no revision for the node yet: see the EnvoyConfig's status",
		}
	case !r.done:
		return verdict{
			status: metav1.ConditionFalse, reason: ReasonProgressing,
			message: fmt.Sprintf("%s rolling out: %d of %d proxies updated, %d ready", r.kind, r.updated, r.desired, r.ready),
		}
	}
	return verdict{
		status: metav1.ConditionTrue, reason: ReasonSucceeded,
		message: fmt.Sprintf("%d of %d proxies ready, served revision %s", r.ready, r.desired, served.Version),
	}
}

// setConditions writes v as Ready, Reconciling and Stalled, as kstatus
// reads them.
func setConditions(st *v1alpha1.EnvoyDeploymentStatus, generation int64, v verdict) {
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: generation})
	}
	set(v1alpha1.ConditionReady, v.status, v.reason, v.message)
	switch {
	case v.status == metav1.ConditionTrue:
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionReconciling)
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionStalled)
	case v.stalled:
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionReconciling)
		set(v1alpha1.ConditionStalled, metav1.ConditionTrue, v.reason, v.message)
	default:
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionStalled)
		set(v1alpha1.ConditionReconciling, metav1.ConditionTrue, v.reason, v.message)
	}
}
