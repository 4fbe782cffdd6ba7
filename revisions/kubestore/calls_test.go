package kubestore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/kubestore"
)

// callCounter counts a client's API calls by verb.
type callCounter struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *callCounter) add(verb string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[verb]++
}

func (c *callCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = map[string]int{}
	return out
}

func counting(c client.WithWatch, n *callCounter) client.Client {
	return interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			n.add("get")
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			n.add("list")
			return c.List(ctx, list, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			n.add("create")
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			n.add("update")
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			n.add("patch")
			return c.Patch(ctx, obj, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			n.add("delete")
			return c.Delete(ctx, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			n.add(sub + " update")
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			n.add(sub + " patch")
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	})
}

// A publication of new content costs three API calls and no read: the
// revision's create (with its status), the record, and unmarking the
// revision served before (queued: it trails the publication). (A commit that changes 1 000 nodes makes 1 000 of these.)
func TestAPICallsPerPublication(t *testing.T) {
	t.Parallel()
	c, ns := newClient(t)
	ctx := context.Background()
	n := &callCounter{calls: map[string]int{}}
	st := kubestore.New(counting(c, n), ns)
	e, err := revisions.New(revisions.Options{Store: st, Publisher: &recorder{}})
	require.NoError(t, err)
	require.NoError(t, e.Restore(ctx))
	require.NoError(t, e.Apply(ctx, node, config("v1"), origin("sha1")))
	n.take()

	for i := 2; i <= 4; i++ {
		require.NoError(t, e.Apply(ctx, node, config(fmt.Sprintf("v%d", i)), origin(fmt.Sprintf("sha%d", i))))
		st.Settle() // the unmarking of the revision before trails the publication
		assert.Equal(t, map[string]int{"create": 1, "update": 1, "patch": 1}, n.take(), "API calls of publication %d", i)
	}

	// What kubectl shows is what the record says.
	var list v1alpha1.EnvoyConfigRevisionList
	require.NoError(t, c.List(ctx, &list, client.InNamespace(ns)))
	require.Len(t, list.Items, 4)
	for _, obj := range list.Items {
		assert.Equal(t, obj.Spec.Hash == config("v4").Hash, obj.Status.Published, "revision %s marked published", obj.Name)
		require.NotNil(t, obj.Status.Origin)
	}
}

// Someone else's change to a record ConfigMap that leaves the record as
// it was (a label) does not stop the next commit: the store reads it
// again and writes over it. A change of the record itself does.
func TestRecordWrittenByOthers(t *testing.T) {
	t.Parallel()
	c, ns := newClient(t)
	ctx := context.Background()
	e, _ := start(t, c, ns)
	require.NoError(t, e.Apply(ctx, node, config("v1"), origin("sha1")))

	var cms corev1.ConfigMapList
	require.NoError(t, c.List(ctx, &cms, client.InNamespace(ns), client.MatchingLabels{kubestore.LabelComponent: "node-record"}))
	require.Len(t, cms.Items, 1)
	cms.Items[0].Labels["team"] = "edge"
	require.NoError(t, c.Update(ctx, &cms.Items[0]))
	require.NoError(t, e.Apply(ctx, node, config("v2"), origin("sha2")), "a label changes nothing of the record")

	// Another writer (a second engine that believes it leads) commits.
	other, _ := start(t, c, ns)
	require.NoError(t, other.Apply(ctx, node, config("v3"), origin("sha3")))
	err := e.Apply(ctx, node, config("v4"), origin("sha4"))
	require.ErrorIs(t, err, revisions.ErrConflict)
}

// A rollback taints the revision served and publishes the one before. The
// tainted revision's state write carries its unpublished flag, and nothing
// else writes that object in the same commit: a separate unmarking of the
// revision served before could land last and erase the taint kubectl
// shows.
func TestRollbackWritesTheTaintedRevisionOnce(t *testing.T) {
	t.Parallel()
	c, ns := newClient(t)
	ctx := context.Background()
	n := &callCounter{calls: map[string]int{}}
	st := kubestore.New(counting(c, n), ns)
	rev := func(body string) *revisions.Revision {
		cfg := config(body)
		return &revisions.Revision{Node: node, Hash: cfg.Hash, Config: cfg, Origin: origin(body), CreatedAt: time.Date(2026, 11, 26, 18, 0, 0, 0, time.UTC)}
	}
	v1, v2 := rev("v1"), rev("v2")
	rec := revisions.NodeRecord{Node: node, History: []string{v1.Hash}, Published: v1.Hash, Revision: 1}
	require.NoError(t, st.Commit(ctx, revisions.Update{Record: rec, Put: []*revisions.Revision{v1}}))
	rec.History, rec.Published, rec.Revision = []string{v2.Hash, v1.Hash}, v2.Hash, 2
	require.NoError(t, st.Commit(ctx, revisions.Update{Record: rec, Put: []*revisions.Revision{v2}}))
	st.Settle()
	assert.Equal(t, map[string]int{"get": 1, "create": 3, "update": 1, "patch": 1}, n.take(),
		"two publications of new content: the second unmarks the first")

	tainted := revisions.StateOf(v2)
	tainted.Taint = &revisions.Taint{
		At: time.Date(2026, 11, 26, 18, 1, 0, 0, time.UTC), Message: "rejected by grpc-go",
		Proxies: []revisions.ProxyRejection{{Proxy: "pod-1", Error: "cluster y: unsupported type STATIC"}},
	}
	rec.Published, rec.Revision = v1.Hash, 3
	require.NoError(t, st.Commit(ctx, revisions.Update{Record: rec, States: []revisions.RevisionState{tainted}}))
	assert.Equal(t, map[string]int{"patch": 2, "update": 1}, n.take(),
		"the taint with its unpublished flag, the record, the revision published again")

	for _, want := range []struct {
		r                  *revisions.Revision
		published, tainted bool
	}{{v1, true, false}, {v2, false, true}} {
		var obj v1alpha1.EnvoyConfigRevision
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: kubestore.RevisionName(node, want.r.Hash)}, &obj))
		assert.Equal(t, want.published, obj.Status.Published, "revision %s published", obj.Name)
		assert.Equal(t, want.tainted, obj.Status.Tainted, "revision %s tainted", obj.Name)
	}
}

// Content applied again from the same origin changes nothing a revision's
// status shows: only the record is written (its revision counter is the
// check against a stale writer). From another origin, the status is
// written too.
func TestSameContentSameOriginWritesOnlyTheRecord(t *testing.T) {
	t.Parallel()
	c, ns := newClient(t)
	ctx := context.Background()
	n := &callCounter{calls: map[string]int{}}
	e, err := revisions.New(revisions.Options{Store: kubestore.New(counting(c, n), ns), Publisher: &recorder{}})
	require.NoError(t, err)
	require.NoError(t, e.Restore(ctx))
	require.NoError(t, e.Apply(ctx, node, config("v1"), origin("sha1")))
	n.take()

	require.NoError(t, e.Apply(ctx, node, config("v1"), origin("sha1")))
	assert.Equal(t, map[string]int{"update": 1}, n.take(), "the same content from the same origin")
	require.NoError(t, e.Apply(ctx, node, config("v1"), origin("sha2")))
	assert.Equal(t, map[string]int{"update": 1, "patch": 1}, n.take(), "the same content from another commit: its origin changes")
}

// Revisions have no status subresource, so each status write bumps the
// object's generation; the conditions say the generation of the write
// that set them (kubectl wait ignores a condition whose observedGeneration
// is behind). Someone else's status edit moves the generation past what
// the store knows: the store's next commit that writes it reads the
// object once and writes over it, with the generation that write makes.
func TestConditionsFollowTheGeneration(t *testing.T) {
	t.Parallel()
	c, ns := newClient(t)
	ctx := context.Background()
	n := &callCounter{calls: map[string]int{}}
	st := kubestore.New(counting(c, n), ns)
	e, err := revisions.New(revisions.Options{Store: st, Publisher: &recorder{}})
	require.NoError(t, err)
	require.NoError(t, e.Restore(ctx))
	for i := 1; i <= 3; i++ {
		require.NoError(t, e.Apply(ctx, node, config(fmt.Sprintf("v%d", i)), origin(fmt.Sprintf("sha%d", i))))
	}
	st.Settle()
	get := func(body string) *v1alpha1.EnvoyConfigRevision {
		t.Helper()
		var obj v1alpha1.EnvoyConfigRevision
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: kubestore.RevisionName(node, config(body).Hash)}, &obj))
		return &obj
	}
	current := func(obj *v1alpha1.EnvoyConfigRevision) {
		t.Helper()
		require.Len(t, obj.Status.Conditions, 4, "revision %s", obj.Name)
		for _, cond := range obj.Status.Conditions {
			assert.Equal(t, obj.Generation, cond.ObservedGeneration, "revision %s, condition %s", obj.Name, cond.Type)
		}
	}
	v1, v2, v3 := get("v1"), get("v2"), get("v3")
	assert.Equal(t, int64(1), v3.Generation, "the revision served was created with its status")
	assert.Equal(t, int64(2), v2.Generation, "created, then unmarked")
	for _, obj := range []*v1alpha1.EnvoyConfigRevision{v1, v2, v3} {
		current(obj)
	}

	// Someone edits v2's status (no subresource keeps them out).
	v2.Status.Origin.Message = "edited by hand"
	require.NoError(t, c.Update(ctx, v2))
	require.Equal(t, int64(3), v2.Generation)
	n.take()

	require.NoError(t, e.Apply(ctx, node, config("v2"), origin("sha4")), "v2 served again")
	st.Settle()
	assert.Equal(t, 1, n.take()["get"], "serving v2 again: the patch from what the store knew fails its test, a read, the patch again")
	v2, v3 = get("v2"), get("v3")
	assert.Equal(t, int64(4), v2.Generation)
	assert.True(t, v2.Status.Published)
	assert.False(t, v3.Status.Published)
	current(v2)
	current(v3)
}

// The unmarking of the revision served before trails the publication; a
// commit that serves that revision again before the unmarking is written
// (a rollback) wins: the unmarking finds the record serving it and is
// dropped, and kubectl shows the revision served as published.
func TestUnmarkingDroppedWhenServedAgain(t *testing.T) {
	c, ns := newClient(t)
	ctx := context.Background()
	st := kubestore.New(c, ns)
	e, err := revisions.New(revisions.Options{Store: st, Publisher: &recorder{}})
	require.NoError(t, err)
	require.NoError(t, e.Restore(ctx))
	require.NoError(t, e.Apply(ctx, node, config("v1"), origin("sha1")))

	// The unmarking of v1 waits until v1 is served again.
	held, release := make(chan struct{}), make(chan struct{})
	defer kubestore.SetBeforeUnmark(func(_, hash string) {
		if hash == config("v1").Hash {
			close(held)
			<-release
		}
	})()
	require.NoError(t, e.Apply(ctx, node, config("v2"), origin("sha2")))
	select {
	case <-held:
	case <-time.After(time.Minute):
		t.Fatal("v1's unmarking was not queued")
	}
	require.NoError(t, e.Apply(ctx, node, config("v1"), origin("sha3")), "v1 served again")
	close(release)
	st.Settle()

	for body, published := range map[string]bool{"v1": true, "v2": false} {
		var obj v1alpha1.EnvoyConfigRevision
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: kubestore.RevisionName(node, config(body).Hash)}, &obj))
		assert.Equal(t, published, obj.Status.Published, "revision %s published", body)
		for _, cond := range obj.Status.Conditions {
			assert.Equal(t, obj.Generation, cond.ObservedGeneration, "revision %s, condition %s", body, cond.Type)
		}
	}
}
