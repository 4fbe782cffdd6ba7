package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EnvoyConfigRevisionSpec is the content of one revision: written once,
// never changed. An object must stay under the API server's limit of
// about 1.5 MiB; the engine refuses a larger revision before serving it.
type EnvoyConfigRevisionSpec struct {
	NodeID string `json:"nodeID"`
	// Hash is the content hash of the rendered configuration.
	Hash string `json:"hash"`
	// +kubebuilder:validation:Enum=v3
	// +optional
	EnvoyAPI *string `json:"envoyAPI,omitempty"`
	// Resources are the rendered resources, by type URL.
	// +optional
	Resources []RevisionResources `json:"resources,omitempty"`
	// CompressedResources holds the resources instead, as gzip-compressed
	// JSON of the same list, when they would not fit in an object as
	// they are (a configuration of many thousand routes).
	// +optional
	CompressedResources []byte `json:"compressedResources,omitempty"`
	// ExternalSecrets name the secrets whose key material the home
	// supplies when the revision is served.
	// +optional
	ExternalSecrets []RevisionExternalSecret `json:"externalSecrets,omitempty"`
	// ExternalEndpoints name the load assignments the controller builds
	// from EndpointSlices when the revision is served.
	// +optional
	ExternalEndpoints []RevisionExternalEndpoints `json:"externalEndpoints,omitempty"`
	// CreatedAt is when the content was first applied.
	CreatedAt metav1.Time `json:"createdAt"`
}

// RevisionResources are the resources of one type, each the Envoy message
// in its protobuf wire form (base64 in JSON).
type RevisionResources struct {
	TypeURL string `json:"typeURL"`
	// Hash is the content hash of the set.
	Hash      string             `json:"hash"`
	Resources []RevisionResource `json:"resources"`
}

// RevisionResource is one rendered resource.
type RevisionResource struct {
	Name string `json:"name"`
	Body []byte `json:"body"`
	// Source is where it was defined.
	// +optional
	Source SourcePosition `json:"source,omitempty"`
}

// SourcePosition is a place in a configuration file.
type SourcePosition struct {
	// File is the path from the repository root, or NAMESPACE/NAME of an object.
	// +optional
	File string `json:"file,omitempty"`
	// Line is 1-based.
	// +optional
	Line int `json:"line,omitempty"`
	// Column is 1-based.
	// +optional
	Column int `json:"column,omitempty"`
}

// RevisionExternalSecret names one secret the home supplies.
type RevisionExternalSecret struct {
	Name string `json:"name"`
	Ref  string `json:"ref"`
	// Key is the entry of an opaque Secret.
	// +optional
	Key  string `json:"key,omitempty"`
	Kind string `json:"kind"`
	// +optional
	Source SourcePosition `json:"source,omitempty"`
}

// RevisionExternalEndpoints names one load assignment built from the
// EndpointSlices a selector picks.
type RevisionExternalEndpoints struct {
	ClusterName string `json:"clusterName"`
	Namespace   string `json:"namespace"`
	// Selector is a label selector in kubectl's syntax.
	Selector string `json:"selector"`
	// TargetPort is the EndpointSlice port used, by name or number.
	// +optional
	TargetPort string `json:"targetPort,omitempty"`
	// +optional
	Source SourcePosition `json:"source,omitempty"`
}

// EnvoyConfigRevisionStatus is what changes about a revision.
type EnvoyConfigRevisionStatus struct {
	// Origin is where the content came from last: source, commit,
	// revision in Flux's form.
	// +optional
	Origin *RevisionOrigin `json:"origin,omitempty"`
	// Published is true while it is the revision served. The flag of the
	// revision served before is cleared just after a new publication, off
	// its path (within seconds of a burst of many nodes), so for a moment
	// two revisions of a node may show it; the EnvoyConfig's
	// status.publishedVersion and the node's record name the one served.
	// +optional
	Published bool `json:"published,omitempty"`
	// LastPublishedAt is when it was last published.
	// +optional
	LastPublishedAt *metav1.Time `json:"lastPublishedAt,omitempty"`
	// Tainted revisions were rejected and are not published again until
	// the taint is cleared.
	// +optional
	Tainted bool `json:"tainted,omitempty"`
	// Taint says who rejected it and why, in the proxies' own words.
	// +optional
	Taint *RevisionTaint `json:"taint,omitempty"`
	// Conditions are Published (it is the revision served) and Tainted
	// (proxies rejected it), and MARIN3R's RevisionPublished and
	// RevisionTainted with the same status, so that scripts waiting for
	// MARIN3R's conditions keep working. Their lastTransitionTime changes
	// only when their status does.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition types of an EnvoyConfigRevision.
const (
	// ConditionPublished is True while the revision is the one served to
	// its node's proxies.
	ConditionPublished = "Published"
	// ConditionTainted is True while proxies' rejection keeps the
	// revision from being published again.
	ConditionTainted = "Tainted"
	// MARIN3RRevisionPublished is MARIN3R's name of ConditionPublished.
	MARIN3RRevisionPublished = "RevisionPublished"
	// MARIN3RRevisionTainted is MARIN3R's name of ConditionTainted.
	MARIN3RRevisionTainted = "RevisionTainted"
)

// RevisionOrigin is where a revision's content came from last.
type RevisionOrigin struct {
	// Kind is git, oci or kube.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Source names the pipeline source (envoyconfig/NS/NAME, envoysource/NS/NAME).
	// +optional
	Source string `json:"source,omitempty"`
	// URL of the repository or artifact.
	// +optional
	URL string `json:"url,omitempty"`
	// Ref is the branch, tag or reference followed.
	// +optional
	Ref string `json:"ref,omitempty"`
	// Path is the directory read inside it.
	// +optional
	Path string `json:"path,omitempty"`
	// Commit is the SHA the content came from.
	// +optional
	Commit string `json:"commit,omitempty"`
	// Digest is the artifact's digest.
	// +optional
	Digest string `json:"digest,omitempty"`
	// Author of the commit.
	// +optional
	Author string `json:"author,omitempty"`
	// Message is the commit's subject.
	// +optional
	Message string `json:"message,omitempty"`
	// Namespace, Name and Generation identify an EnvoyConfig object.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// Revision is the origin in Flux's form, for display.
	// +optional
	Revision string `json:"revision,omitempty"`
}

// RevisionTaint records a rejection.
type RevisionTaint struct {
	At      metav1.Time `json:"at"`
	Message string      `json:"message"`
	// Proxies are the proxies that rejected it, with their own text.
	// +optional
	Proxies []ProxyRejection `json:"proxies,omitempty"`
}

// ProxyRejection is one proxy's rejection.
type ProxyRejection struct {
	Proxy string `json:"proxy"`
	Error string `json:"error"`
}

// No status subresource, on purpose: with one, the API server drops the
// status of a Create, which costs every publication a second write of the
// new revision (a commit that changes 1 000 nodes, 1 000 more writes).
// Only legate writes revisions and their content is written once, so the
// split that guards a spec from status writers protects nothing here.

// EnvoyConfigRevision is one stored revision of a node's configuration.
// Its status is written with its content in one create; it has no status
// subresource, so every status change bumps metadata.generation, and the
// conditions' observedGeneration is the generation of that write.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=envoyconfigrevisions,scope=Namespaced,shortName=ecr
// +kubebuilder:printcolumn:name=Node,type=string,JSONPath=`.spec.nodeID`
// +kubebuilder:printcolumn:name=Hash,type=string,JSONPath=`.spec.hash`
// (The columns read the conditions, True or False, not the flags, which
// are left out when false and would leave the column blank.)
// +kubebuilder:printcolumn:name=Published,type=string,JSONPath=`.status.conditions[?(@.type=="Published")].status`
// +kubebuilder:printcolumn:name=Tainted,type=string,JSONPath=`.status.conditions[?(@.type=="Tainted")].status`
// +kubebuilder:printcolumn:name=Commit,type=string,JSONPath=`.status.origin.commit`,priority=1
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`
type EnvoyConfigRevision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EnvoyConfigRevisionSpec   `json:"spec,omitempty"`
	Status EnvoyConfigRevisionStatus `json:"status,omitempty"`
}

// EnvoyConfigRevisionList is a list of EnvoyConfigRevision.
// +kubebuilder:object:root=true
type EnvoyConfigRevisionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EnvoyConfigRevision `json:"items"`
}
