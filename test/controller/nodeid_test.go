package controller_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/ctltest"
)

// The API server refuses an EnvoyConfig whose nodeID is longer than a
// DNS name (the CRD's maxLength): a megabyte-long one once grew /metrics
// to megabytes.
func TestLongNodeIDIsRefusedByTheAPIServer(t *testing.T) {
	t.Parallel()
	cluster := envtest.Start(t)
	c := ctltest.Client(t, cluster.Config)
	ctx := context.Background()

	ec := sample(t)
	ec.Name = "long"
	ec.Spec.NodeID = strings.Repeat("a", 254)
	err := c.Create(ctx, ec)
	require.Error(t, err)
	assert.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), "spec.nodeID")

	ok := sample(t)
	ok.Name = "at-the-bound"
	ok.Spec.NodeID = strings.Repeat("a", 253)
	require.NoError(t, c.Create(ctx, ok))
}
