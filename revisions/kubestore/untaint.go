package kubestore

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
)

// The client half of the kubectl-native untaint: the annotation the
// controller's untaint reconciler acts on, set on a revision this package
// stored, then awaited until the controller took it away.

// RequestUntaint asks the controller that keeps its revisions in namespace
// to clear the taint of node's revision whose hash starts with prefix, the
// way kubectl annotate does, and waits until it has (ctx bounds the
// wait). It returns the revision's full hash.
func RequestUntaint(ctx context.Context, c client.Client, namespace, node, prefix string) (string, error) {
	var list v1alpha1.EnvoyConfigRevisionList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return "", fmt.Errorf("list the EnvoyConfigRevisions of namespace %s: %w", namespace, err)
	}
	var found []v1alpha1.EnvoyConfigRevision
	for _, r := range list.Items {
		if r.Spec.NodeID == node && len(prefix) > 0 && len(r.Spec.Hash) >= len(prefix) && r.Spec.Hash[:len(prefix)] == prefix {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("node %s has no revision %s in namespace %s", node, prefix, namespace)
	case 1:
	default:
		return "", fmt.Errorf("revision %s of node %s is ambiguous: %d revisions start with it; give more of the hash", prefix, node, len(found))
	}
	rev := found[0]
	patch := []byte(`{"metadata":{"annotations":{"` + v1alpha1.UntaintAnnotation + `":"true"}}}`)
	if err := c.Patch(ctx, &rev, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return "", fmt.Errorf("annotate EnvoyConfigRevision %s/%s: %w", namespace, rev.Name, err)
	}
	key := client.ObjectKeyFromObject(&rev)
	for {
		if err := c.Get(ctx, key, &rev); err != nil {
			return "", fmt.Errorf("read EnvoyConfigRevision %s: %w", key, err)
		}
		if _, pending := rev.Annotations[v1alpha1.UntaintAnnotation]; !pending {
			return rev.Spec.Hash, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("the controller has not handled the untaint of %s yet (is legate controller running?): %w", key, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
