package kubestore

// The object form of a revision: an EnvoyConfigRevision's spec holds the
// rendered content, its status what happened to it.

import (
	"fmt"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/sources"
)

// resourcesOf is cfg's resources in the object's form, sorted by type.
func resourcesOf(cfg *render.NodeConfig) []v1alpha1.RevisionResources {
	out := make([]v1alpha1.RevisionResources, 0, len(cfg.Types))
	for _, url := range slices.Sorted(maps.Keys(cfg.Types)) {
		set := cfg.Types[url]
		rs := v1alpha1.RevisionResources{TypeURL: url, Hash: set.Hash, Resources: make([]v1alpha1.RevisionResource, 0, len(set.Resources))}
		for _, res := range set.Resources {
			rs.Resources = append(rs.Resources, v1alpha1.RevisionResource{Name: res.Name, Body: res.Body, Source: position(res.Source)})
		}
		out = append(out, rs)
	}
	return out
}

func position(p render.Position) v1alpha1.SourcePosition {
	return v1alpha1.SourcePosition{File: p.File, Line: p.Line, Column: p.Column}
}

func renderPosition(p v1alpha1.SourcePosition) render.Position {
	return render.Position{File: p.File, Line: p.Line, Column: p.Column}
}

// toObject is the EnvoyConfigRevision of r: content in the spec.
func toObject(r *revisions.Revision, namespace string) *v1alpha1.EnvoyConfigRevision {
	v3 := "v3"
	obj := &v1alpha1.EnvoyConfigRevision{
		ObjectMeta: metav1.ObjectMeta{Name: RevisionName(r.Node, r.Hash), Namespace: namespace, Labels: labels(r.Node, "revision")},
		Spec: v1alpha1.EnvoyConfigRevisionSpec{
			NodeID: r.Node, Hash: r.Hash, EnvoyAPI: &v3, CreatedAt: metav1.NewTime(r.CreatedAt),
		},
	}
	obj.Spec.Resources = resourcesOf(r.Config)
	if revisions.EncodedSize(r.Config) > compressAbove {
		if packed, err := compress(obj.Spec.Resources); err == nil {
			obj.Spec.Resources, obj.Spec.CompressedResources = nil, packed
		}
	}
	for _, x := range r.Config.ExternalSecrets {
		obj.Spec.ExternalSecrets = append(obj.Spec.ExternalSecrets, v1alpha1.RevisionExternalSecret{
			Name: x.Name, Ref: x.Ref, Key: x.Key, Kind: x.Kind, Source: position(x.Source),
		})
	}
	for _, x := range r.Config.ExternalEndpoints {
		obj.Spec.ExternalEndpoints = append(obj.Spec.ExternalEndpoints, v1alpha1.RevisionExternalEndpoints{
			ClusterName: x.ClusterName, Namespace: x.Namespace, Selector: x.Selector, TargetPort: x.TargetPort, Source: position(x.Source),
		})
	}
	return obj
}

func statusOf(st revisions.RevisionState) v1alpha1.EnvoyConfigRevisionStatus {
	o := st.Origin
	out := v1alpha1.EnvoyConfigRevisionStatus{Origin: &v1alpha1.RevisionOrigin{
		Kind: string(o.Kind), Source: o.Source, URL: o.URL, Ref: o.Ref, Path: o.Path, Commit: o.Commit, Digest: o.Digest,
		Author: o.Author, Message: o.Message, Namespace: o.Namespace, Name: o.Name, Generation: o.Generation, Revision: o.Revision(),
	}}
	if !st.PublishedAt.IsZero() {
		t := metav1.NewTime(st.PublishedAt)
		out.LastPublishedAt = &t
	}
	if st.Taint != nil {
		out.Tainted = true
		out.Taint = &v1alpha1.RevisionTaint{At: metav1.NewTime(st.Taint.At), Message: st.Taint.Message}
		for _, p := range st.Taint.Proxies {
			out.Taint.Proxies = append(out.Taint.Proxies, v1alpha1.ProxyRejection{Proxy: p.Proxy, Error: p.Error})
		}
	}
	return out
}

// fromObject is the revision an EnvoyConfigRevision holds.
func fromObject(obj *v1alpha1.EnvoyConfigRevision) (*revisions.Revision, error) {
	resources := obj.Spec.Resources
	if obj.Spec.CompressedResources != nil {
		var err error
		if resources, err = decompress(obj.Spec.CompressedResources); err != nil {
			return nil, fmt.Errorf("EnvoyConfigRevision %s/%s: spec.compressedResources: %w", obj.Namespace, obj.Name, err)
		}
	}
	cfg := &render.NodeConfig{NodeID: obj.Spec.NodeID, Hash: obj.Spec.Hash, Types: make(map[string]render.TypeSet, len(resources))}
	for _, rs := range resources {
		set := render.TypeSet{Hash: rs.Hash, Resources: make([]render.Resource, 0, len(rs.Resources))}
		for _, r := range rs.Resources {
			set.Resources = append(set.Resources, render.Resource{Name: r.Name, Body: r.Body, Source: renderPosition(r.Source)})
		}
		cfg.Types[rs.TypeURL] = set
	}
	for _, x := range obj.Spec.ExternalSecrets {
		cfg.ExternalSecrets = append(cfg.ExternalSecrets, render.ExternalSecret{Name: x.Name, Ref: x.Ref, Key: x.Key, Kind: x.Kind, Source: renderPosition(x.Source)})
	}
	for _, x := range obj.Spec.ExternalEndpoints {
		cfg.ExternalEndpoints = append(cfg.ExternalEndpoints, render.ExternalEndpoints{
			ClusterName: x.ClusterName, Namespace: x.Namespace, Selector: x.Selector, TargetPort: x.TargetPort, Source: renderPosition(x.Source),
		})
	}
	r := &revisions.Revision{Node: obj.Spec.NodeID, Hash: obj.Spec.Hash, Config: cfg, CreatedAt: obj.Spec.CreatedAt.Time}
	st := obj.Status
	if o := st.Origin; o != nil {
		r.Origin = sources.Origin{
			Kind: sources.Kind(o.Kind), Source: o.Source, URL: o.URL, Ref: o.Ref, Path: o.Path, Commit: o.Commit, Digest: o.Digest,
			Author: o.Author, Message: o.Message, Namespace: o.Namespace, Name: o.Name, Generation: o.Generation,
		}
	}
	if st.LastPublishedAt != nil {
		r.PublishedAt = st.LastPublishedAt.Time
	}
	if st.Taint != nil {
		r.Taint = &revisions.Taint{At: st.Taint.At.Time, Message: st.Taint.Message}
		for _, p := range st.Taint.Proxies {
			r.Taint.Proxies = append(r.Taint.Proxies, revisions.ProxyRejection{Proxy: p.Proxy, Error: p.Error})
		}
	}
	return r, nil
}
