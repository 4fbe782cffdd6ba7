package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/legate-dev/legate/config/v1alpha1"
)

// writerOn is a status writer on a fake API server holding one
// EnvoyConfig, default/edge; before runs before each status update reaches
// it (nil: nothing).
func writerOn(t *testing.T, leading bool, before func(ctx context.Context, c client.Client) error) (*statusWriter, client.Client) {
	t.Helper()
	scheme, err := Scheme()
	require.NoError(t, err)
	ec := &v1alpha1.EnvoyConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "edge", Generation: 1}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ec).WithStatusSubresource(ec).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				if before != nil {
					if err := before(ctx, c); err != nil {
						return err
					}
				}
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		}).Build()
	return &statusWriter{client: c, leading: func() bool { return leading }}, c
}

var edge = types.NamespacedName{Namespace: "default", Name: "edge"}

// theirsOnce is a writerOn hook by which someone else writes the status
// (commit "theirs") before the writer's first write, when other is set:
// the writer's copy is then stale.
func theirsOnce(t *testing.T, other bool) func(ctx context.Context, c client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		if !other {
			return nil
		}
		other = false
		var ec v1alpha1.EnvoyConfig
		require.NoError(t, c.Get(ctx, edge, &ec))
		ec.Status.Commit = "theirs"
		return c.Status().Update(ctx, &ec)
	}
}

// Someone else writes the status between the writer's read and its
// write: the writer reads again, applies its change on top of theirs and
// writes, keeping both.
func TestStatusWriterRetriesOnConflict(t *testing.T) {
	ctx := context.Background()
	w, c := writerOn(t, true, theirsOnce(t, true))
	var ec v1alpha1.EnvoyConfig
	runs := 0
	wrote, err := w.update(ctx, edge, &ec, func() bool {
		runs++
		ec.Status.ObservedGeneration = 1
		return true
	})
	require.NoError(t, err)
	assert.True(t, wrote)
	assert.Equal(t, 2, runs, "the change is applied again to the newer object")
	var got v1alpha1.EnvoyConfig
	require.NoError(t, c.Get(ctx, edge, &got))
	assert.Equal(t, int64(1), got.Status.ObservedGeneration)
	assert.Equal(t, "theirs", got.Status.Commit, "the other write is kept")
}

// A conflict that never ends is returned, naming the object, after a
// bounded number of tries.
func TestStatusWriterGivesUpOnEndlessConflicts(t *testing.T) {
	tries := 0
	w, _ := writerOn(t, true, func(context.Context, client.Client) error {
		tries++
		return apierrors.NewConflict(schema.GroupResource{Group: "legate.dev", Resource: "envoyconfigs"}, "edge", nil)
	})
	var ec v1alpha1.EnvoyConfig
	_, err := w.update(context.Background(), edge, &ec, func() bool { return true })
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err))
	assert.Contains(t, err.Error(), "default/edge")
	assert.Greater(t, tries, 1)
}

// An unchanged status is not written, nor one of an object that is gone.
func TestStatusWriterWritesChangesOnly(t *testing.T) {
	writes := 0
	w, _ := writerOn(t, true, func(context.Context, client.Client) error { writes++; return nil })
	var ec v1alpha1.EnvoyConfig
	wrote, err := w.update(context.Background(), edge, &ec, func() bool { return false })
	require.NoError(t, err)
	assert.False(t, wrote)
	wrote, err = w.update(context.Background(), types.NamespacedName{Namespace: "default", Name: "gone"}, &ec, func() bool { return true })
	require.NoError(t, err)
	assert.False(t, wrote)
	assert.Zero(t, writes)
}

// A replica that does not lead writes nothing.
func TestStatusWriterOfAFollowerWritesNothing(t *testing.T) {
	writes := 0
	w, _ := writerOn(t, false, func(context.Context, client.Client) error { writes++; return nil })
	var ec v1alpha1.EnvoyConfig
	_, err := w.update(context.Background(), edge, &ec, func() bool { return true })
	require.ErrorIs(t, err, errNotLeading)
	assert.Zero(t, writes)
}

// countGets has c's reads of key counted in *n.
func countGets(c client.Client, key types.NamespacedName, n *int) client.Client {
	return interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if k == key {
				*n++
			}
			return c.Get(ctx, k, obj, opts...)
		},
	})
}

// A status written from the object the reconcile has just read (to render
// it) does not read it again; when it changed meanwhile, the write is a
// conflict and the writer reads the newer object and writes on top of it.
func TestStatusWriterWritesFromTheObjectJustRead(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name      string
		changed   bool // someone writes the object between the read and the write
		wantGets  int
		wantRuns  int
		wantTheir bool
	}{
		{"unchanged since read", false, 0, 1, false},
		{"changed since read", true, 1, 2, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, c := writerOn(t, true, theirsOnce(t, tt.changed))
			var ec v1alpha1.EnvoyConfig
			require.NoError(t, c.Get(ctx, edge, &ec)) // the reconcile's read
			gets := 0
			w.client = countGets(c, edge, &gets)
			runs := 0
			wrote, err := w.updateRead(ctx, edge, &ec, func() bool {
				runs++
				ec.Status.ObservedGeneration = 1
				return true
			})
			require.NoError(t, err)
			assert.True(t, wrote)
			assert.Equal(t, tt.wantGets, gets, "reads of the object by the writer")
			assert.Equal(t, tt.wantRuns, runs)
			var got v1alpha1.EnvoyConfig
			require.NoError(t, c.Get(ctx, edge, &got))
			assert.Equal(t, int64(1), got.Status.ObservedGeneration)
			assert.Equal(t, tt.wantTheir, got.Status.Commit == "theirs", "the other write is kept")
		})
	}
}
