package v1alpha1

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Modes of an EnvoyDeployment.
const (
	// ModeDeployment runs the proxies as a Deployment (MARIN3R's only mode).
	ModeDeployment = "Deployment"
	// ModeDaemonSet runs one proxy per node as a DaemonSet.
	ModeDaemonSet = "DaemonSet"
)

// Patch types of EnvoyDeploymentPatch.
const (
	PatchStrategicMerge = "StrategicMerge"
	PatchJSONMerge      = "JSONMerge"
)

// EnvoyDeploymentSpec is a fleet of Envoy proxies served one node's
// configuration: MARIN3R's EnvoyDeployment spec, field for field, plus what
// Envoy Gateway's EnvoyProxy users rely on (DaemonSet mode, scheduling,
// security contexts, the Service, patches).
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'DaemonSet' || !has(self.replicas)",message="spec.replicas: a DaemonSet runs one proxy per node; remove replicas or set mode Deployment"
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'DaemonSet' || !has(self.patch) || !has(self.patch.deployment)",message="spec.patch.deployment: mode is DaemonSet; patch daemonSet instead"
// +kubebuilder:validation:XValidation:rule="has(self.mode) && self.mode == 'DaemonSet' || !has(self.patch) || !has(self.patch.daemonSet)",message="spec.patch.daemonSet: mode is Deployment; patch deployment instead"
type EnvoyDeploymentSpec struct {
	// EnvoyConfigRef names the EnvoyConfig, in this namespace, whose
	// spec.nodeID the proxies are; "namespace/name" is accepted only when
	// the namespace is this one (a namespace reaches nothing of another).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	EnvoyConfigRef string `json:"envoyConfigRef"`
	// DiscoveryServiceRef is MARIN3R's reference to its DiscoveryService.
	// Accepted and unused: legate is the discovery service.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	DiscoveryServiceRef string `json:"discoveryServiceRef,omitempty"`
	// Mode runs the proxies as a Deployment (the default) or a DaemonSet.
	// +kubebuilder:validation:Enum=Deployment;DaemonSet
	// +optional
	Mode *string `json:"mode,omitempty"`
	// ClusterID is the proxies' node.cluster (default: the node ID).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ClusterID *string `json:"clusterID,omitempty"`
	// Ports are the Envoy container's ports, and the Service's.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	Ports []EnvoyDeploymentPort `json:"ports,omitempty"`
	// Image is the Envoy image (default: legate's sidecar image). It must
	// have bash for the drain hook, as the official envoyproxy images do.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Image *string `json:"image,omitempty"`
	// Resources are the Envoy container's requests and limits (default:
	// the controller's sidecar defaults).
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// ClientCertificateDuration is MARIN3R's lifetime of the proxies'
	// client certificate. Accepted; legate's PKI issues and renews every
	// proxy certificate with its own, controller-wide lifetime.
	// +optional
	ClientCertificateDuration *metav1.Duration `json:"duration,omitempty"`
	// ExtraArgs are added to Envoy's command line.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=1024
	// +optional
	ExtraArgs []string `json:"extraArgs,omitempty"`
	// AdminPort is Envoy's admin port, on loopback (default 9901); Envoy
	// runs as non-root.
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=65535
	// +optional
	AdminPort *int32 `json:"adminPort,omitempty"`
	// AdminAccessLogPath is the admin interface's access log (default
	// /dev/null).
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^/`
	// +optional
	AdminAccessLogPath *string `json:"adminAccessLogPath,omitempty"`
	// Replicas is a static count or a HorizontalPodAutoscaler's range
	// (default: static 1). Not with mode DaemonSet.
	// +optional
	Replicas *ReplicasSpec `json:"replicas,omitempty"`
	// LivenessProbe probes Envoy's readiness listener (default: MARIN3R's
	// timings).
	// +optional
	LivenessProbe *ProbeSpec `json:"livenessProbe,omitempty"`
	// ReadinessProbe probes Envoy's readiness listener (default: MARIN3R's
	// timings).
	// +optional
	ReadinessProbe *ProbeSpec `json:"readinessProbe,omitempty"`
	// Affinity of the proxies' pods.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// PodDisruptionBudget, when set, limits voluntary evictions of the
	// proxies.
	// +optional
	PodDisruptionBudget *PodDisruptionBudgetSpec `json:"podDisruptionBudget,omitempty"`
	// ShutdownManager sets how the proxies drain when their pod stops.
	// legate drains through Envoy's own /drain_listeners (no extra
	// container); without it, they drain for 300 s, gradually.
	// +optional
	ShutdownManager *ShutdownManager `json:"shutdownManager,omitempty"`
	// InitManager is MARIN3R's bootstrap-writing init container.
	// Accepted and unused: legate passes the bootstrap inline.
	// +optional
	InitManager *InitManager `json:"initManager,omitempty"`
	// NodeSelector of the proxies' pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations of the proxies' pods.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// TopologySpreadConstraints of the proxies' pods; a constraint without
	// a labelSelector selects this EnvoyDeployment's pods.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// PodSecurityContext is the pods' security context.
	// +optional
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`
	// SecurityContext is the Envoy container's (default: non-root, no
	// capabilities, read-only root filesystem).
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
	// PodLabels are added to the pods' labels.
	// +optional
	PodLabels map[string]string `json:"podLabels,omitempty"`
	// PodAnnotations are added to the pods' annotations.
	// +optional
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`
	// Service exposes the ports (default: a ClusterIP Service).
	// +optional
	Service *EnvoyDeploymentService `json:"service,omitempty"`
	// Patch changes the generated objects last: the escape hatch for what
	// the spec has no field for.
	// +optional
	Patch *EnvoyDeploymentPatches `json:"patch,omitempty"`
}

// EnvoyDeploymentPort is one port of the Envoy container.
type EnvoyDeploymentPort struct {
	// Name of the port, unique.
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// Port Envoy listens on.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`
	// Protocol (default TCP).
	// +kubebuilder:validation:Enum=TCP;UDP;SCTP
	// +optional
	Protocol *corev1.Protocol `json:"protocol,omitempty"`
	// ServicePort is the port the Service exposes it on (default: port).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	ServicePort *int32 `json:"servicePort,omitempty"`
}

// ReplicasSpec is a static count or an autoscaler's range: one of them.
// +kubebuilder:validation:XValidation:rule="!(has(self.static) && has(self.dynamic))",message="spec.replicas: set one of static and dynamic"
type ReplicasSpec struct {
	// Static is a fixed count.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Static *int32 `json:"static,omitempty"`
	// Dynamic makes a HorizontalPodAutoscaler.
	// +optional
	Dynamic *DynamicReplicasSpec `json:"dynamic,omitempty"`
}

// DynamicReplicasSpec is a HorizontalPodAutoscaler's range and metrics.
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || self.minReplicas <= self.maxReplicas",message="spec.replicas.dynamic: minReplicas is above maxReplicas"
type DynamicReplicasSpec struct {
	// MinReplicas is the least count (default 1).
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// MaxReplicas is the greatest count.
	// +kubebuilder:validation:Minimum=1
	MaxReplicas int32 `json:"maxReplicas"`
	// Metrics the autoscaler follows (default: 80 % average CPU
	// utilization).
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Metrics []autoscalingv2.MetricSpec `json:"metrics,omitempty"`
	// Behavior of the autoscaler up and down.
	// +optional
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
}

// ProbeSpec is a probe's timings; the probe asks Envoy's readiness
// listener.
type ProbeSpec struct {
	// InitialDelaySeconds before the first probe.
	// +kubebuilder:validation:Minimum=0
	InitialDelaySeconds int32 `json:"initialDelaySeconds"`
	// TimeoutSeconds of one probe.
	// +kubebuilder:validation:Minimum=1
	TimeoutSeconds int32 `json:"timeoutSeconds"`
	// PeriodSeconds between probes.
	// +kubebuilder:validation:Minimum=1
	PeriodSeconds int32 `json:"periodSeconds"`
	// SuccessThreshold is the count of successes after a failure.
	// +kubebuilder:validation:Minimum=1
	SuccessThreshold int32 `json:"successThreshold"`
	// FailureThreshold is the count of failures that fail the probe.
	// +kubebuilder:validation:Minimum=1
	FailureThreshold int32 `json:"failureThreshold"`
}

// PodDisruptionBudgetSpec is one of minAvailable and maxUnavailable.
// +kubebuilder:validation:XValidation:rule="!(has(self.minAvailable) && has(self.maxUnavailable))",message="spec.podDisruptionBudget: set one of minAvailable and maxUnavailable"
type PodDisruptionBudgetSpec struct {
	// MinAvailable pods after an eviction.
	// +optional
	MinAvailable *intstr.IntOrString `json:"minAvailable,omitempty"`
	// MaxUnavailable pods after an eviction.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// ShutdownManager is MARIN3R's drain on termination; legate drains with
// Envoy's /drain_listeners from a preStop hook instead of a second
// container.
type ShutdownManager struct {
	// Image of MARIN3R's shutdown manager. Accepted and unused.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Image *string `json:"image,omitempty"`
	// ServerPort of MARIN3R's shutdown manager. Accepted and unused.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	ServerPort *int32 `json:"serverPort,omitempty"`
	// DrainTime is how long, in seconds, Envoy drains its connections
	// when the pod stops and when listeners change (default 300). The
	// pods' grace period is set above it.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	// +optional
	DrainTime *int64 `json:"drainTime,omitempty"`
	// DrainStrategy is Envoy's --drain-strategy (default gradual).
	// +kubebuilder:validation:Enum=gradual;immediate
	// +optional
	DrainStrategy *string `json:"drainStrategy,omitempty"`
}

// InitManager is MARIN3R's init container; accepted and unused.
type InitManager struct {
	// Image of MARIN3R's init manager. Accepted and unused.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Image *string `json:"image,omitempty"`
}

// EnvoyDeploymentService is the Service in front of the proxies.
type EnvoyDeploymentService struct {
	// Type of the Service (default ClusterIP).
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	// +optional
	Type *corev1.ServiceType `json:"type,omitempty"`
	// Annotations of the Service (a cloud's load-balancer settings).
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// Labels added to the Service's.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// LoadBalancerClass of a LoadBalancer Service.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	LoadBalancerClass *string `json:"loadBalancerClass,omitempty"`
	// LoadBalancerSourceRanges are the CIDRs a LoadBalancer Service
	// admits.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=43
	// +optional
	LoadBalancerSourceRanges []string `json:"loadBalancerSourceRanges,omitempty"`
	// ExternalTrafficPolicy of a NodePort or LoadBalancer Service.
	// +kubebuilder:validation:Enum=Cluster;Local
	// +optional
	ExternalTrafficPolicy *corev1.ServiceExternalTrafficPolicy `json:"externalTrafficPolicy,omitempty"`
}

// EnvoyDeploymentPatches patch the generated objects, each its own.
type EnvoyDeploymentPatches struct {
	// Deployment patches the Deployment (mode Deployment).
	// +optional
	Deployment *EnvoyDeploymentPatch `json:"deployment,omitempty"`
	// DaemonSet patches the DaemonSet (mode DaemonSet).
	// +optional
	DaemonSet *EnvoyDeploymentPatch `json:"daemonSet,omitempty"`
	// Service patches the Service.
	// +optional
	Service *EnvoyDeploymentPatch `json:"service,omitempty"`
	// HPA patches the HorizontalPodAutoscaler.
	// +optional
	HPA *EnvoyDeploymentPatch `json:"hpa,omitempty"`
	// PDB patches the PodDisruptionBudget.
	// +optional
	PDB *EnvoyDeploymentPatch `json:"pdb,omitempty"`
}

// EnvoyDeploymentPatch is a patch of one generated object, as Envoy
// Gateway's EnvoyProxy has it.
type EnvoyDeploymentPatch struct {
	// Type is StrategicMerge (the default: lists of containers, ports or
	// volumes merge by name) or JSONMerge (RFC 7386).
	// +kubebuilder:validation:Enum=StrategicMerge;JSONMerge
	// +optional
	Type *string `json:"type,omitempty"`
	// Value is the patch, an object in the generated object's shape.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Value runtime.RawExtension `json:"value"`
}

// ServedRevision names the revision the node's proxies are served.
type ServedRevision struct {
	// Hash is the revision's content hash.
	Hash string `json:"hash"`
	// Version is the revision's short hash, as the EnvoyConfig's
	// status.publishedVersion shows it.
	// +optional
	Version string `json:"version,omitempty"`
	// Commit the revision came from (or the object generation).
	// +optional
	Commit string `json:"commit,omitempty"`
	// Revision is the origin in Flux's form (main@sha1:<sha>).
	// +optional
	Revision string `json:"revision,omitempty"`
}

// EnvoyDeploymentStatus is what the proxies' objects and legate's engine
// report.
type EnvoyDeploymentStatus struct {
	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastHandledReconcileAt echoes reconcile.fluxcd.io/requestedAt.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
	// NodeID is the proxies' node.id, the referenced EnvoyConfig's.
	// +optional
	NodeID string `json:"nodeID,omitempty"`
	// Kind is the workload running the proxies: Deployment or DaemonSet.
	// +optional
	Kind string `json:"kind,omitempty"`
	// WorkloadName names the Deployment or DaemonSet (and the Service,
	// PodDisruptionBudget and HorizontalPodAutoscaler).
	// +optional
	WorkloadName string `json:"workloadName,omitempty"`
	// Replicas is the count of proxies the workload wants.
	// +optional
	Replicas int32 `json:"replicas"`
	// ReadyReplicas is the count of ready proxies.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`
	// UpdatedReplicas is the count of proxies of the current pod template.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
	// ServedRevision is the revision legate serves the node: the
	// proxies' effective configuration.
	// +optional
	ServedRevision *ServedRevision `json:"servedRevision,omitempty"`
	// Conditions are Ready, Reconciling and Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EnvoyDeployment runs a fleet of Envoy proxies (an edge gateway, an
// egress proxy) served the configuration of one EnvoyConfig's node.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=envoydeployments,scope=Namespaced,shortName=ed
// +kubebuilder:printcolumn:name=Node,type=string,JSONPath=`.status.nodeID`
// +kubebuilder:printcolumn:name=Replicas,type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name=Ready-Replicas,type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name=Revision,type=string,JSONPath=`.status.servedRevision.version`
// +kubebuilder:printcolumn:name=Ready,type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name=Status,type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name=Origin,type=string,JSONPath=`.status.servedRevision.revision`,priority=1
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`
type EnvoyDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EnvoyDeploymentSpec   `json:"spec,omitempty"`
	Status EnvoyDeploymentStatus `json:"status,omitempty"`
}

// EnvoyDeploymentList is a list of EnvoyDeployments.
// +kubebuilder:object:root=true
type EnvoyDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EnvoyDeployment `json:"items"`
}

// The kind registers itself, so that groupversion.go, which others edit,
// stays as it is.
func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &EnvoyDeployment{}, &EnvoyDeploymentList{})
		return nil
	})
}
