package kubereplicas

import (
	"testing"

	"github.com/stretchr/testify/assert"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// A replica says whether it runs alone, leads or follows, and who holds
// the Lease of its own namespace.
func TestViewOf(t *testing.T) {
	scheme := runtime.NewScheme()
	assert.NoError(t, coordinationv1.AddToScheme(scheme))
	holder := "replica-b"
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "legate-system", Name: LeaseName}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}},
	).Build()
	ctx := t.Context()
	assert.Equal(t, View{Replica: "a", Role: "single", Proxies: 3}, ViewOf(ctx, reader, "legate-system", "a", false, true, 3))
	assert.Equal(t, View{Replica: "a", Role: "follower", LeaseHolder: "replica-b", Proxies: 1}, ViewOf(ctx, reader, "legate-system", "a", true, false, 1))
	assert.Equal(t, View{Replica: "b", Role: "leader", LeaseHolder: "replica-b"}, ViewOf(ctx, reader, "legate-system", "b", true, true, 0))
	assert.Empty(t, ViewOf(ctx, reader, "team-a", "a", true, false, 0).LeaseHolder, "another namespace's Lease is not this one's")
}
