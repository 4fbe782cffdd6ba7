package controller

import (
	"context"

	"github.com/legate-dev/legate/revisions/kubereplicas"
)

// ReplicaView is GET /api/v1/replica (kubereplicas.View).
type ReplicaView = kubereplicas.View

// replicaView reads the Lease for the holder.
func (c *Controller) replicaView(ctx context.Context) ReplicaView {
	return kubereplicas.ViewOf(ctx, c.client, c.opts.Namespace, c.opts.Replica, c.opts.LeaderElect, c.core.Engine().Leading(), c.core.XDS().Streams())
}

// Leading reports whether this replica decides: it leads, or runs
// without leader election.
func (c *Controller) Leading() bool { return c.core.Engine().Leading() }
