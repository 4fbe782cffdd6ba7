// Package kubesecrets resolves external secrets from Kubernetes Secrets,
// for the Kubernetes home: an sds.Resolver that reads each Secret it is
// asked for through the controller-runtime client.Reader it is given. The
// controller gives it the manager's API reader (mgr.GetAPIReader()), not
// the cache: every Resolve is one GET to the API server, bounded by
// readTimeout, so that no informer holds the key material of every Secret
// in the cluster in memory. The controller learns that a Secret changed
// from a watch of Secrets' metadata only, and then has the sds.Server read
// the Secrets it uses again (Refresh). It is apart from sds so that a
// home without Kubernetes does not link the Kubernetes client.
//
// The package must not import a home.
package kubesecrets

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/sds"
)

// readTimeout bounds one Secret read.
const readTimeout = 10 * time.Second

// Resolver reads ref "namespace/name" from the Secret name of namespace;
// a bare "name" from Namespace. The Secret's data keys are the entries:
// tls.crt and tls.key, ca.crt, or an opaque secret's key.
type Resolver struct {
	// Client reads Secrets; an uncached reader, as the package comment
	// says: a cached one would hold every Secret's data.
	Client client.Reader
	// Namespace of refs that name none.
	Namespace string
	// Plaintext keeps key material off xDS without mutual TLS.
	sds.Plaintext
}

// Resolve implements sds.Resolver. A Secret that does not exist (yet), or
// cannot be read, is waited for; its key material never appears in errors.
func (r Resolver) Resolve(ext render.ExternalSecret) (render.Resource, error) {
	ns, name, qualified := strings.Cut(ext.Ref, "/")
	if !qualified {
		ns, name = r.Namespace, ext.Ref
	}
	if ns == "" || name == "" || strings.Contains(name, "/") {
		return render.Resource{}, fmt.Errorf("secret %q (%s): ref %q must be NAME or NAMESPACE/NAME", ext.Name, ext.Source, ext.Ref)
	}
	if err := r.Refused(ext); err != nil {
		return render.Resource{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	var sec corev1.Secret
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			return render.Resource{}, revisions.NotReady(fmt.Errorf("secret %q (ref %q, %s): Secret %s/%s does not exist", ext.Name, ext.Ref, ext.Source, ns, name))
		}
		return render.Resource{}, revisions.NotReady(fmt.Errorf("secret %q (ref %q, %s): read Secret %s/%s: %w", ext.Name, ext.Ref, ext.Source, ns, name, err))
	}
	return sds.Build(ext, entries{sec: &sec})
}

// entries are the data keys of one Secret.
type entries struct{ sec *corev1.Secret }

func (e entries) Read(key string) ([]byte, error) {
	v, ok := e.sec.Data[key]
	switch {
	case !ok:
		return nil, fmt.Errorf("no key %s in Secret %s/%s", key, e.sec.Namespace, e.sec.Name)
	case len(v) == 0:
		return nil, fmt.Errorf("key %s of Secret %s/%s is empty", key, e.sec.Namespace, e.sec.Name)
	}
	return v, nil
}

func (e entries) Has(key string) bool {
	_, ok := e.sec.Data[key]
	return ok
}

var _ sds.Resolver = Resolver{}
