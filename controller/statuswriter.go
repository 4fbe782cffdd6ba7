package controller

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// errNotLeading is a status write asked of a replica that does not lead.
var errNotLeading = errors.New("this replica does not lead: the leader writes statuses")

// statusWriter is the one place the Kubernetes home writes the status of
// its objects (Contour's StatusUpdateHandler is the model): a reconciler
// computes the status it wants as a mutation, and the writer reads the
// latest object, applies the mutation to it and updates it, reading and
// applying again when someone else wrote meanwhile (a conflict). Only the
// leader writes: on another replica every write is refused, so that two
// replicas never fight over one status.
//
// It is safe for concurrent use; the reconcilers' work queues hand it at
// most one write per object at a time.
type statusWriter struct {
	client client.Client // direct: every attempt reads the latest object
	// leading reports whether this replica leads now.
	leading func() bool
}

// update reads the object key into obj, lets mutate change its status
// and, when mutate reports a change, writes it; on a conflict it does it
// all again with the newer object. mutate must be a pure function of obj
// and what it captured: it may run several times. It reports whether it
// wrote; an object that does not exist is not an error (nothing written).
func (w *statusWriter) update(ctx context.Context, key types.NamespacedName, obj client.Object, mutate func() (changed bool)) (bool, error) {
	return w.write(ctx, key, obj, false, mutate)
}

// updateRead is update for an obj the caller has just read from the API
// server itself (not from a cache): the first attempt starts from it, and
// its resourceVersion guards the write, so a reconcile that read the
// object to render it does not read it again to write its status. A
// conflict (the object changed since) reads it as update does.
func (w *statusWriter) updateRead(ctx context.Context, key types.NamespacedName, obj client.Object, mutate func() (changed bool)) (bool, error) {
	return w.write(ctx, key, obj, true, mutate)
}

func (w *statusWriter) write(ctx context.Context, key types.NamespacedName, obj client.Object, read bool, mutate func() (changed bool)) (bool, error) {
	if !w.leading() {
		return false, errNotLeading
	}
	wrote := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		wrote = false
		if !read {
			if err := w.client.Get(ctx, key, obj); err != nil {
				return err
			}
		}
		read = false
		if !mutate() {
			return nil
		}
		if err := w.client.Status().Update(ctx, obj); err != nil {
			return err
		}
		wrote = true
		return nil
	})
	if err != nil {
		if client.IgnoreNotFound(err) == nil {
			return false, nil
		}
		return false, fmt.Errorf("write the status of %s: %w", key, err)
	}
	return wrote, nil
}
