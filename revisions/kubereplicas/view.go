package kubereplicas

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// View is GET /api/v1/replica: who this replica is and what it does.
type View struct {
	Replica string `json:"replica"`
	// Role is "leader", "follower", or "single" without leader election.
	Role string `json:"role"`
	// LeaseHolder is the replica that leads, as the Lease says.
	LeaseHolder string `json:"leaseHolder,omitempty"`
	// Proxies counts the xDS streams this replica serves.
	Proxies int `json:"proxies"`
}

// ViewOf is what replica, serving streams xDS streams, says of itself:
// without leader election (elect false) it runs alone; with it, it leads
// or follows, and the holder of the Lease of namespace is read through
// reader.
func ViewOf(ctx context.Context, reader client.Reader, namespace, replica string, elect, leading bool, streams int) View {
	v := View{Replica: replica, Role: "single", Proxies: streams}
	if !elect {
		return v
	}
	v.Role = "follower"
	if leading {
		v.Role = "leader"
	}
	v.LeaseHolder = LeaseHolder(ctx, reader, namespace)
	return v
}
