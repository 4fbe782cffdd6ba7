package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EnvoySourceSpec says where configuration is fetched from: exactly one of
// git, oci and sourceRef.
// +kubebuilder:validation:XValidation:rule="[has(self.git), has(self.oci), has(self.sourceRef)].filter(x, x).size() == 1",message="exactly one of git, oci and sourceRef must be set"
type EnvoySourceSpec struct {
	// +optional
	Git *GitSource `json:"git,omitempty"`
	// +optional
	OCI *OCISource `json:"oci,omitempty"`
	// SourceRef names a Flux GitRepository or OCIRepository whose artifact
	// legate downloads and verifies.
	// +optional
	SourceRef *FluxSourceRef `json:"sourceRef,omitempty"`
	// Path is the directory inside the repository or artifact ("envoy"
	// and Flux's "./envoy" alike); the root by default.
	// +optional
	Path string `json:"path,omitempty"`
	// Interval between fetches.
	// +kubebuilder:default="1m"
	// +optional
	Interval metav1.Duration `json:"interval,omitempty"`
	// Suspend stops fetching until it is false again.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
	// CommitStatus reports every commit's outcome on the forge.
	// +optional
	CommitStatus *CommitStatus `json:"commitStatus,omitempty"`
	// Rollout moves each new commit to the proxies of the source's nodes
	// step by step, each step gated (see docs/rollout.md); without it a
	// new commit goes to every proxy at once.
	// +optional
	Rollout *RolloutSpec `json:"rollout,omitempty"`
}

// GitSource is a Git repository.
type GitSource struct {
	// +kubebuilder:validation:Pattern=`^(https?|ssh)://.+$`
	URL string `json:"url"`
	// +optional
	Ref *GitRef `json:"ref,omitempty"`
	// SecretRef names a Secret of the namespace with the credentials, as
	// Flux reads them (username/password, bearerToken, identity and
	// known_hosts).
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
}

// GitRef is what to follow, in Flux's vocabulary; the first set of commit,
// name, semver, tag and branch wins, as in Flux.
type GitRef struct {
	// Branch follows the branch's head.
	// +optional
	Branch string `json:"branch,omitempty"`
	// Tag is one tag.
	// +optional
	Tag string `json:"tag,omitempty"`
	// SemVer follows the highest tag in the semver range.
	// +optional
	SemVer string `json:"semver,omitempty"`
	// Name is a reference name, e.g. refs/pull/42/head.
	// +optional
	Name string `json:"name,omitempty"`
	// Commit is one commit SHA.
	// +optional
	Commit string `json:"commit,omitempty"`
}

// OCISource is an OCI artifact.
type OCISource struct {
	// +kubebuilder:validation:Pattern=`^oci://.+$`
	URL string `json:"url"`
	// +optional
	Ref *OCIRef `json:"ref,omitempty"`
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
}

// OCIRef is the artifact to follow; digest wins over semver over tag.
type OCIRef struct {
	// Tag is the artifact's tag (default latest).
	// +optional
	Tag string `json:"tag,omitempty"`
	// SemVer follows the highest tag in the semver range.
	// +optional
	SemVer string `json:"semver,omitempty"`
	// Digest pins the artifact (sha256:...).
	// +optional
	Digest string `json:"digest,omitempty"`
}

// FluxSourceRef names a Flux source object.
type FluxSourceRef struct {
	// +kubebuilder:validation:Enum=GitRepository;OCIRepository
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Namespace defaults to the EnvoySource's.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// LocalObjectReference names an object of the same namespace.
type LocalObjectReference struct {
	Name string `json:"name"`
}

// CommitStatus says where to report commit statuses.
type CommitStatus struct {
	// +kubebuilder:validation:Enum=gitea;github;gitlab
	Provider string `json:"provider"`
	// Address is the forge's base URL; derived from the repository URL
	// when empty (GitHub's API for GitHub).
	// +optional
	Address string `json:"address,omitempty"`
	// Repository is owner/name (GitLab: the project path); derived from
	// the repository URL when empty.
	// +optional
	Repository string `json:"repository,omitempty"`
	// TokenSecretRef names a Secret of the namespace whose "token" key can
	// write commit statuses.
	TokenSecretRef LocalObjectReference `json:"tokenSecretRef"`
}

// EnvoySourceStatus is where the source stands, in Flux's terms.
type EnvoySourceStatus struct {
	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastHandledReconcileAt is the reconcile.fluxcd.io/requestedAt value
	// last handled.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
	// LastAttemptedRevision is the revision last fetched
	// ("main@sha1:<sha>").
	// +optional
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`
	// LastAppliedRevision is the revision whose configuration was last
	// applied; it trails while the newest is invalid.
	// +optional
	LastAppliedRevision string `json:"lastAppliedRevision,omitempty"`
	// Nodes are the node IDs the last good render gave.
	// +optional
	Nodes []string `json:"nodes,omitempty"`
	// Diagnostics are the first problems of the last rejected render,
	// each with its file:line.
	// +optional
	Diagnostics []string `json:"diagnostics,omitempty"`
	// ArtifactDigest is the digest of the last artifact verified.
	// +optional
	ArtifactDigest string `json:"artifactDigest,omitempty"`
	// Rollout is where the rollout of the newest commit stands over the
	// source's nodes: the nodes it changed count, their proxies are
	// summed, and the rest is the word of the node that holds it back
	// (paused before progressing, the earliest step first; once all ended,
	// failed before aborted before succeeded), which the message names.
	// `kubectl annotate envoysource NAME legate.dev/rollout=promote|pause|resume|abort`
	// acts on every node of the source with a rollout under way.
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

// EnvoySource is a place configuration is fetched from.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=envoysources,scope=Namespaced,shortName=es
// +kubebuilder:printcolumn:name=Ready,type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name=Reason,type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name=Applied,type=string,JSONPath=`.status.lastAppliedRevision`
// +kubebuilder:printcolumn:name=Rollout,type=string,JSONPath=`.status.rollout.phase`,priority=1
// +kubebuilder:printcolumn:name=Suspended,type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`
type EnvoySource struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EnvoySourceSpec   `json:"spec,omitempty"`
	Status EnvoySourceStatus `json:"status,omitempty"`
}

// EnvoySourceList is a list of EnvoySource.
// +kubebuilder:object:root=true
type EnvoySourceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EnvoySource `json:"items"`
}
