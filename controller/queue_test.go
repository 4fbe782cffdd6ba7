package controller

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func newTestQueue(t *testing.T) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	t.Helper()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	return q
}

// Far more objects than the channel that fed the reconcilers held (256),
// each raised several times, before and after the reconciler started:
// every object is queued, once.
func TestRequestsKeepEveryObjectOnce(t *testing.T) {
	const objects = 1000
	r := newRequests()
	key := func(i int) types.NamespacedName {
		return types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("ec-%d", i)}
	}
	for i := range objects / 2 {
		r.add(key(i))
		r.add(key(i))
	}
	q := newTestQueue(t)
	require.NoError(t, r.Start(context.Background(), q))
	for i := objects / 4; i < objects; i++ { // some raised before too
		r.add(key(i))
		r.add(key(i))
	}
	require.Equal(t, objects, q.Len(), "one request per object, none dropped")
	seen := map[types.NamespacedName]bool{}
	for range objects {
		req, shutdown := q.Get()
		require.False(t, shutdown)
		assert.False(t, seen[req.NamespacedName], "a request is queued once: %s", req)
		seen[req.NamespacedName] = true
		q.Done(req)
	}
	for i := range objects {
		assert.True(t, seen[key(i)], "object %d was queued", i)
	}
}
