package controller

import (
	"context"

	"github.com/legate-dev/legate/revisions/kubereplicas"
)

// ReplicaView is GET /api/v1/replica: who this replica is and what it
// does.
type ReplicaView struct {
	Replica string `json:"replica"`
	// Role is "leader", "follower", or "single" without leader election.
	Role string `json:"role"`
	// LeaseHolder is the replica that leads, as the Lease says.
	LeaseHolder string `json:"leaseHolder,omitempty"`
	// Proxies counts the xDS streams this replica serves.
	Proxies int `json:"proxies"`
}

// replicaView reads the Lease for the holder.
func (c *Controller) replicaView(ctx context.Context) ReplicaView {
	v := ReplicaView{Replica: c.opts.Replica, Role: "single", Proxies: c.core.XDS().Streams()}
	if !c.opts.LeaderElect {
		return v
	}
	v.Role = "follower"
	if c.core.Engine().Leading() {
		v.Role = "leader"
	}
	v.LeaseHolder = kubereplicas.LeaseHolder(ctx, c.client, c.opts.Namespace)
	return v
}

// Leading reports whether this replica decides: it leads, or runs
// without leader election.
func (c *Controller) Leading() bool { return c.core.Engine().Leading() }
