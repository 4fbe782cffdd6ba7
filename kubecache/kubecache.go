// Package kubecache says what the Kubernetes home's clients know and what
// its manager's cache holds: the scheme of legate's kinds, and a cache
// scoped to what the home reads (the policy ConfigMaps of its own
// namespace, not every ConfigMap; the metadata of injected Pods, not every
// Pod; no object's managed fields), so that its memory grows with legate's
// objects rather than with the cluster.
//
// It must not import a home.
package kubecache

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/pki/kubepki"
	"github.com/legate-dev/legate/sources/kube"
	"github.com/legate-dev/legate/webhook"
)

// Scheme holds the types the Kubernetes home reads and writes:
// Kubernetes' own and legate's.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Options is the cache of a home whose own namespace is home and that
// reconciles the objects of watched ("" for every namespace).
func Options(home, watched string) (cache.Options, error) {
	var o cache.Options
	policyLabel, err := labels.Parse(kube.PolicyLabel)
	if err != nil {
		return o, fmt.Errorf("policy label: %w", err)
	}
	proxyLabel, err := labels.Parse(webhook.ProxyLabel)
	if err != nil {
		return o, fmt.Errorf("proxy label: %w", err)
	}
	o.ByObject = map[client.Object]cache.ByObject{
		// The only ConfigMaps cached are the policy ones of the home's
		// namespace (the store reads its own directly; no other
		// namespace's policy binds).
		&corev1.ConfigMap{}: {Label: policyLabel, Namespaces: map[string]cache.Config{home: {}}},
		// injected pods only, and of them what names their proxy
		&corev1.Pod{}: {Label: proxyLabel, Transform: kubepki.PodMetadata},
	}
	// The cache holds EndpointSlices in full (their endpoints are read on
	// every change) and no object's managed fields.
	o.DefaultTransform = cache.TransformStripManagedFields()
	if watched != "" {
		// the watched namespace, and the home's own for its revisions
		o.DefaultNamespaces = map[string]cache.Config{watched: {}, home: {}}
	}
	return o, nil
}
