package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EnvoySourceSpec says where configuration is fetched from: exactly one of
// git, oci and sourceRef.
// +kubebuilder:validation:XValidation:rule="[has(self.git), has(self.oci), has(self.sourceRef)].filter(x, x).size() == 1",message="exactly one of git, oci and sourceRef must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.previews) || !self.previews.enabled || (has(self.git) && has(self.git.ref) && has(self.git.ref.branch) && has(self.commitStatus))",message="spec.previews.enabled needs spec.git with ref.branch (the branch the pull requests target; their heads are fetched from the repository) and spec.commitStatus (the forge they are listed from and reported to)"
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
	// Previews renders every pull request open into spec.git.ref.branch
	// and reports the verdict and the per-node change on it (see
	// docs/previews.md); nothing of a preview is published.
	// +optional
	Previews *Previews `json:"previews,omitempty"`
}

// Previews turns on the pull-request previews of an EnvoySource of kind
// git with a spec.commitStatus: at every interval the forge's open pull
// requests into the source's branch are listed, and each new head is
// rendered with the source's options, policies and secret scope.
type Previews struct {
	// Enabled turns the previews on.
	Enabled bool `json:"enabled"`
	// Concurrency is how many previews of this source render at once.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=8
	// +kubebuilder:default=2
	// +optional
	Concurrency int32 `json:"concurrency,omitempty"`
}

// MaxPreviewStatuses bounds status.previews.
const MaxPreviewStatuses = 20

// PullRequestPreview is where the preview of one open pull request stands.
type PullRequestPreview struct {
	// Number is the pull request's number (GitLab: the merge request's iid).
	Number int64 `json:"number"`
	// Head is the head commit last seen open.
	Head string `json:"head"`
	// Fork says the head comes from another repository; its preview read
	// no key material.
	// +optional
	Fork bool `json:"fork,omitempty"`
}

// PreviewsStatus is what the previews of an EnvoySource follow.
type PreviewsStatus struct {
	// Open are the pull requests being previewed, newest number first, at
	// most 20; their verdicts are on the forge (the commit status
	// legate/preview and legate's comment).
	// +kubebuilder:validation:MaxItems=20
	// +optional
	Open []PullRequestPreview `json:"open,omitempty"`
	// OpenCount is how many pull requests are open into the branch (up to
	// the 100 a listing reads).
	// +optional
	OpenCount int32 `json:"openCount,omitempty"`
	// Message says why the open pull requests could not be listed (the
	// last attempt), or that more were open than a listing reads.
	// +optional
	Message string `json:"message,omitempty"`
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
	// Previews are the pull requests being previewed (spec.previews).
	// +optional
	Previews *PreviewsStatus `json:"previews,omitempty"`
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
