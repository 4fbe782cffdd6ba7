// Package kube reads EnvoyConfig objects from the Kubernetes API as a
// source: each object is one Source whose file tree holds the object as a
// YAML document, which the renderer reads as it reads an EnvoyConfig file
// in a repository (MARIN3R's shape; a namespaced secret reference resolves
// in the object's namespace). The pipeline then treats an object like a
// commit: its generation is the origin's, and two objects that configure
// one node ID are a conflict reported on both.
//
// The package must not import a home, render or publish.
package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/sources"
)

// ErrGone is returned (wrapped) when the object no longer exists: its home
// stops the source and prunes what it rendered.
var ErrGone = fmt.Errorf("the EnvoyConfig no longer exists")

// EnvoyConfigSource fetches one EnvoyConfig object. It is not safe for
// concurrent fetches (sources.Source).
type EnvoyConfigSource struct {
	client  client.Reader
	key     client.ObjectKey
	read    *v1alpha1.EnvoyConfig // the last fetch's object, until Read takes it
	last    string
	rollout *v1alpha1.RolloutSpec
	node    string
	command string
}

// NewEnvoyConfigSource returns the source of the EnvoyConfig key, read
// through c. The Kubernetes controller passes its uncached client, so a
// fetch reads the object as the API server holds it now, not an informer's
// copy that may still lag the event that asked for the fetch.
func NewEnvoyConfigSource(c client.Reader, key client.ObjectKey) *EnvoyConfigSource {
	return &EnvoyConfigSource{client: c, key: key}
}

// Read returns the object as the last Fetch read it, once (nil after
// that, before a Fetch, or after one that failed), so that its home may
// write the object's status without reading it again; the source keeps
// no copy once it is taken.
func (s *EnvoyConfigSource) Read() *v1alpha1.EnvoyConfig {
	ec := s.read
	s.read = nil
	return ec
}

// Name is the pipeline's name of the object: sources.EnvoyConfigRef's
// string, "envoyconfig/<namespace>/<name>".
func (s *EnvoyConfigSource) Name() string {
	return sources.EnvoyConfigRef(s.key.Namespace, s.key.Name).String()
}

// Fetch reads the object and returns it as one document,
// <namespace>/<name>.yaml.
func (s *EnvoyConfigSource) Fetch(ctx context.Context) (*sources.Result, error) {
	s.read = nil
	var ec v1alpha1.EnvoyConfig
	if err := s.client.Get(ctx, s.key, &ec); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("EnvoyConfig %s: %w", s.key, ErrGone)
		}
		return nil, fmt.Errorf("read EnvoyConfig %s: %w", s.key, err)
	}
	tree, doc, err := Tree(&ec)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(doc)
	content := hex.EncodeToString(sum[:])
	res := &sources.Result{
		Snapshot: sources.Snapshot{Files: tree, Origin: sources.Origin{
			Kind: sources.KindKube, Source: s.Name(),
			Namespace: ec.Namespace, Name: ec.Name, Generation: ec.Generation,
		}},
		Content: content,
		Changed: content != s.last,
	}
	s.last, s.rollout, s.node, s.command = content, ec.Spec.Rollout, ec.Spec.NodeID, ec.Annotations[v1alpha1.RolloutAnnotation]
	s.read = &ec
	return res, nil
}

// Rollout is the spec.rollout of the object the last Fetch read (nil
// without one): the policy of exactly the content it returned.
func (s *EnvoyConfigSource) Rollout() *v1alpha1.RolloutSpec { return s.rollout }

// RolloutCommand is the object's node ID and the value of its
// legate.dev/rollout annotation ("" without one) as the last Fetch read
// them.
func (s *EnvoyConfigSource) RolloutCommand() (node, command string) { return s.node, s.command }

// Tree is the file tree the renderer reads for ec, one document
// <namespace>/<name>.yaml (the admission webhook renders the same tree the
// reconciler does), and that document.
func Tree(ec *v1alpha1.EnvoyConfig) (fs.FS, []byte, error) {
	// spec.rollout says how the configuration reaches the proxies, not
	// what it is: it is not rendered, and changing it alone makes no new
	// revision (the next one rolls out under it).
	spec := ec.Spec
	spec.Rollout = nil
	doc, err := yaml.Marshal(document{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "EnvoyConfig",
		Metadata: metadata{Name: ec.Name, Namespace: ec.Namespace},
		Spec:     spec,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("encode EnvoyConfig %s/%s: %w", ec.Namespace, ec.Name, err)
	}
	tree, err := sources.NewTree(map[string][]byte{ec.Namespace + "/" + ec.Name + ".yaml": doc})
	if err != nil {
		return nil, nil, err
	}
	return tree, doc, nil
}

// document is what the renderer reads: the object without its status and
// server-side metadata, so that a status write changes nothing rendered.
type document struct {
	APIVersion string                   `json:"apiVersion"`
	Kind       string                   `json:"kind"`
	Metadata   metadata                 `json:"metadata"`
	Spec       v1alpha1.EnvoyConfigSpec `json:"spec"`
}

type metadata struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

var _ sources.Source = (*EnvoyConfigSource)(nil)

// Object is an empty object of the kind of r (an EnvoyConfig or an
// EnvoySource), named as r, to read it into.
func Object(r sources.Ref) client.Object {
	var obj client.Object = &v1alpha1.EnvoyConfig{}
	if r.Kind == sources.RefEnvoySource {
		obj = &v1alpha1.EnvoySource{}
	}
	obj.SetNamespace(r.Namespace)
	obj.SetName(r.Name)
	return obj
}

// KindOf is the kind of r as Kubernetes spells it.
func KindOf(r sources.Ref) string {
	switch r.Kind {
	case sources.RefEnvoyConfig:
		return "EnvoyConfig"
	case sources.RefEnvoySource:
		return "EnvoySource"
	}
	return ""
}
