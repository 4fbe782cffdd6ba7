package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Cache states of an EnvoyConfig, with MARIN3R's meaning.
const (
	// CacheInSync: the desired revision is what the xDS server serves.
	CacheInSync = "InSync"
	// CacheRollback: newer revisions were rejected; an older one is served.
	CacheRollback = "Rollback"
	// CacheRollbackFailed: every revision was rejected; nothing better can
	// be served.
	CacheRollbackFailed = "RollbackFailed"
)

// EnvoyConfigSpec is the configuration of one node ID, in MARIN3R's
// v1alpha1 shape.
type EnvoyConfigSpec struct {
	// NodeID is the node.id of the proxies this configuration is for.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	NodeID string `json:"nodeID"`
	// Serialization of the values of envoyResources: json (the default)
	// or yaml.
	// +kubebuilder:validation:Enum=json;yaml
	// +optional
	Serialization *string `json:"serialization,omitempty"`
	// EnvoyAPI is the Envoy API version; only v3.
	// +kubebuilder:validation:Enum=v3
	// +optional
	EnvoyAPI *string `json:"envoyAPI,omitempty"`
	// EnvoyResources holds resources by type. Deprecated by MARIN3R in
	// favour of resources; accepted as it is.
	// +optional
	EnvoyResources *EnvoyResources `json:"envoyResources,omitempty"`
	// Resources are the node's resources, or what to generate them from.
	// +optional
	Resources []Resource `json:"resources,omitempty"`
	// Rollout moves a new revision of the node to its proxies step by
	// step, each step gated (see docs/rollout.md); without it a new
	// revision goes to every proxy at once.
	// +optional
	Rollout *RolloutSpec `json:"rollout,omitempty"`
}

// Resource is one resource, given as a value or generated from a Secret or
// from EndpointSlices.
type Resource struct {
	// Type of the resource.
	// +kubebuilder:validation:Enum=listener;route;scopedRoute;cluster;endpoint;secret;runtime;extensionConfig
	Type string `json:"type"`
	// Value is the resource (the Envoy v3 message of its type).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Value *runtime.RawExtension `json:"value,omitempty"`
	// GenerateFromTlsSecret names a kubernetes.io/tls Secret of the
	// namespace to make an SDS secret of.
	// +optional
	GenerateFromTlsSecret *string `json:"generateFromTlsSecret,omitempty"` //nolint:revive // MARIN3R's field name
	// GenerateFromOpaqueSecret selects one key of an Opaque Secret to make a
	// generic SDS secret of.
	// +optional
	GenerateFromOpaqueSecret *SecretKeySelector `json:"generateFromOpaqueSecret,omitempty"`
	// GenerateFromEndpointSlices makes a ClusterLoadAssignment of the
	// EndpointSlices the selector picks.
	// +optional
	GenerateFromEndpointSlices *GenerateFromEndpointSlices `json:"generateFromEndpointSlices,omitempty"`
	// Blueprint is what a Secret generates: tlsCertificate (the default) or
	// validationContext.
	// +kubebuilder:validation:Enum=tlsCertificate;validationContext
	// +optional
	Blueprint *string `json:"blueprint,omitempty"`
}

// SecretKeySelector picks one key of a Secret of the namespace.
type SecretKeySelector struct {
	Name string `json:"name"`
	Key  string `json:"key"`
	// Alias is the name of the SDS secret made.
	Alias string `json:"alias"`
}

// GenerateFromEndpointSlices selects EndpointSlices for one cluster.
type GenerateFromEndpointSlices struct {
	Selector    *metav1.LabelSelector `json:"selector"`
	ClusterName string                `json:"clusterName"`
	TargetPort  string                `json:"targetPort"`
}

// EnvoyResources holds resources by type, each value serialized as text
// (MARIN3R's deprecated form).
type EnvoyResources struct {
	// Endpoints are ClusterLoadAssignments.
	// +optional
	Endpoints []EnvoyResource `json:"endpoints,omitempty"`
	// Clusters are Envoy clusters.
	// +optional
	Clusters []EnvoyResource `json:"clusters,omitempty"`
	// Routes are RouteConfigurations.
	// +optional
	Routes []EnvoyResource `json:"routes,omitempty"`
	// ScopedRoutes are ScopedRouteConfigurations.
	// +optional
	ScopedRoutes []EnvoyResource `json:"scopedRoutes,omitempty"`
	// Listeners are Envoy listeners.
	// +optional
	Listeners []EnvoyResource `json:"listeners,omitempty"`
	// Runtimes are runtime layers (RTDS).
	// +optional
	Runtimes []EnvoyResource `json:"runtimes,omitempty"`
	// Secrets name kubernetes.io/tls Secrets of the namespace.
	// +optional
	Secrets []EnvoySecretResource `json:"secrets,omitempty"`
	// ExtensionConfigs are TypedExtensionConfigs (ECDS).
	// +optional
	ExtensionConfigs []EnvoyResource `json:"extensionConfigs,omitempty"`
}

// EnvoyResource is one resource serialized as text.
type EnvoyResource struct {
	// Name has no effect (the resource names itself); kept for MARIN3R
	// manifests.
	// +optional
	Name *string `json:"name,omitempty"`
	// Value is the resource, serialized as the spec's serialization says.
	Value string `json:"value"`
}

// EnvoySecretResource names a kubernetes.io/tls Secret of the namespace.
type EnvoySecretResource struct {
	// Name is the Secret, and the SDS secret made of it.
	Name string `json:"name"`
	// Ref is ignored, as MARIN3R ignores it: the Secret is the one named.
	// +optional
	Ref *corev1.SecretReference `json:"ref,omitempty"`
}

// EnvoyConfigStatus is where the node's configuration stands.
type EnvoyConfigStatus struct {
	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastHandledReconcileAt is the value of the
	// reconcile.fluxcd.io/requestedAt annotation last handled, as Flux's
	// tooling expects.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
	// CacheState: InSync, Rollback or RollbackFailed, as MARIN3R says it
	// (InSync: the desired revision is served, whether or not a proxy
	// accepted it). State is legate's fuller word.
	// +optional
	CacheState *string `json:"cacheState,omitempty"`
	// State is where the node stands, as legate status and the status page
	// say it: InSync (every connected proxy accepted the newest revision),
	// Pending (not every proxy has answered; with none connected it stays
	// Pending), Degraded, Rollback, RollbackFailed, or Rejected (the
	// newest spec was refused by validation and reached no proxy).
	// +optional
	State string `json:"state,omitempty"`
	// PublishedVersion is the version the xDS server serves.
	// +optional
	PublishedVersion *string `json:"publishedVersion,omitempty"`
	// DesiredVersion is the version the spec makes.
	// +optional
	DesiredVersion *string `json:"desiredVersion,omitempty"`
	// Revisions reference the node's EnvoyConfigRevision objects, oldest
	// first.
	// +optional
	ConfigRevisions []ConfigRevisionRef `json:"revisions,omitempty"`
	// Commit is the commit (or object generation) the published revision
	// came from.
	// +optional
	Commit string `json:"commit,omitempty"`
	// Proxies counts the node's proxies and their answers to the
	// publication in place.
	// +optional
	Proxies *ProxyCounts `json:"proxies,omitempty"`
	// Rejection is the proxies' own text when they rejected the desired
	// revision.
	// +optional
	Rejection string `json:"rejection,omitempty"`
	// Rollout is where the rollout of the node's newest revision stands
	// (the last one, once it ended). `kubectl annotate envoyconfig NAME
	// legate.dev/rollout=promote|pause|resume|abort` acts on it.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`
	// Conditions are Ready, Reconciling and Stalled, with reasons from Flux's
	// github.com/fluxcd/pkg/apis/meta where Flux has one, and Progressing
	// once a rollout ran: True while it is under way (reason Step1, Step2,
	// …, WaitingForAnalysis or RolloutPaused), False after it (reason
	// RolloutSucceeded, RolloutFailed, RolloutAborted or
	// RolloutSuperseded).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ConfigRevisionRef references one EnvoyConfigRevision.
type ConfigRevisionRef struct {
	Version string                 `json:"version"`
	Ref     corev1.ObjectReference `json:"ref"`
}

// ProxyCounts counts a node's proxies.
type ProxyCounts struct {
	Connected int `json:"connected"`
	Accepted  int `json:"accepted"`
	Rejected  int `json:"rejected"`
}

// EnvoyConfig is the configuration of one node ID.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=envoyconfigs,scope=Namespaced,shortName=ec
// +kubebuilder:printcolumn:name=Node,type=string,JSONPath=`.spec.nodeID`
// +kubebuilder:printcolumn:name=State,type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name=Ready,type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name=Reason,type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name=Desired,type=string,JSONPath=`.status.desiredVersion`
// +kubebuilder:printcolumn:name=Published,type=string,JSONPath=`.status.publishedVersion`
// +kubebuilder:printcolumn:name=Rollout,type=string,JSONPath=`.status.rollout.phase`,priority=1
// +kubebuilder:printcolumn:name=Commit,type=string,JSONPath=`.status.commit`,priority=1
// +kubebuilder:printcolumn:name=Cache,type=string,JSONPath=`.status.cacheState`,priority=1
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`
type EnvoyConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EnvoyConfigSpec   `json:"spec,omitempty"`
	Status EnvoyConfigStatus `json:"status,omitempty"`
}

// EnvoyConfigList is a list of EnvoyConfig.
// +kubebuilder:object:root=true
type EnvoyConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EnvoyConfig `json:"items"`
}
