package controller

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// requests feeds one reconciler the requests legate itself raises (an
// engine outcome, a render to do again): a source.Source that captures
// the reconciler's own work queue and adds to it. The work queue keeps one
// entry per object however often it is added, and an add never blocks, so
// that no object's request is dropped, whatever the number of objects
// (a buffered channel dropped the requests beyond its size, and a rollback
// of the whole fleet left statuses stale).
//
// Requests added before the reconciler starts (a replica that does not
// lead yet) are kept, one per object, and handed over when it does.
// add is safe for concurrent use.
type requests struct {
	mu      sync.Mutex
	queue   workqueue.TypedRateLimitingInterface[reconcile.Request]
	pending map[reconcile.Request]struct{}
}

var _ source.Source = (*requests)(nil)

func newRequests() *requests {
	return &requests{pending: map[reconcile.Request]struct{}{}}
}

// Start is called once by the reconciler's controller with its queue.
func (r *requests) Start(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queue = q
	for req := range r.pending {
		q.Add(req)
	}
	r.pending = nil
	return nil
}

// add asks for a reconcile of key.
func (r *requests) add(key types.NamespacedName) {
	req := reconcile.Request{NamespacedName: key}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.queue == nil {
		r.pending[req] = struct{}{}
		return
	}
	r.queue.Add(req)
}
