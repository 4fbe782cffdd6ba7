package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is legate.dev/v1alpha1.
var GroupVersion = schema.GroupVersion{Group: "legate.dev", Version: "v1alpha1"}

var (
	// SchemeBuilder registers the types of this package.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&EnvoyConfig{}, &EnvoyConfigList{},
		&EnvoySource{}, &EnvoySourceList{},
		&EnvoyConfigRevision{}, &EnvoyConfigRevisionList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// ReconcileRequestAnnotation asks for an immediate reconcile, as `flux
// reconcile` sets it; the status's lastHandledReconcileAt echoes it once
// handled.
const ReconcileRequestAnnotation = "reconcile.fluxcd.io/requestedAt"

// UntaintAnnotation on an EnvoyConfigRevision asks legate to clear its
// taint (kubectl annotate ecr NAME legate.dev/untaint=true); legate
// removes the annotation once done and records an event.
const UntaintAnnotation = "legate.dev/untaint"

// Condition types, as Flux and kstatus read them.
const (
	// ConditionReady is True when the object's configuration is served as
	// its spec asks.
	ConditionReady = "Ready"
	// ConditionReconciling is True while legate works towards the spec.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when legate cannot make progress without a
	// change of the spec or of something it refers to.
	ConditionStalled = "Stalled"
)
