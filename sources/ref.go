package sources

import "strings"

// RefKind is the kind of object a Ref names, in the lower-case form the
// pipeline's source names carry.
type RefKind string

const (
	RefEnvoyConfig RefKind = "envoyconfig"
	RefEnvoySource RefKind = "envoysource"
)

// Ref is the identity of a source that stands for one Kubernetes object
// (an EnvoyConfig or an EnvoySource). Its String form, "KIND/NAMESPACE/NAME",
// is the pipeline's source name, stored in every revision's origin and in
// every node's ownership record: it must never change, or the revisions
// and ownerships a running controller stored would belong to nobody after
// an upgrade.
type Ref struct {
	Kind      RefKind
	Namespace string
	Name      string
}

// EnvoyConfigRef is the Ref of the EnvoyConfig namespace/name.
func EnvoyConfigRef(namespace, name string) Ref {
	return Ref{Kind: RefEnvoyConfig, Namespace: namespace, Name: name}
}

// EnvoySourceRef is the Ref of the EnvoySource namespace/name.
func EnvoySourceRef(namespace, name string) Ref {
	return Ref{Kind: RefEnvoySource, Namespace: namespace, Name: name}
}

// String is the pipeline's source name: "KIND/NAMESPACE/NAME".
func (r Ref) String() string { return string(r.Kind) + "/" + r.Namespace + "/" + r.Name }

// ParseRef reads a source name made by Ref.String. ok is false for any
// other name (a Git or OCI source of standalone, an unknown kind, a part
// missing): the name stands for no object.
func ParseRef(s string) (r Ref, ok bool) {
	kind, rest, ok := strings.Cut(s, "/")
	if !ok {
		return Ref{}, false
	}
	ns, name, ok := strings.Cut(rest, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return Ref{}, false
	}
	switch k := RefKind(kind); k {
	case RefEnvoyConfig, RefEnvoySource:
		return Ref{Kind: k, Namespace: ns, Name: name}, true
	}
	return Ref{}, false
}
