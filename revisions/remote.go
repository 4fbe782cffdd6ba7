package revisions

import (
	"context"
	"slices"
	"strings"
)

// The leader judges a publication on every replica's proxies: the
// followers summarise their own proxies' answers (LocalAnswers), the
// leader takes them in (ObserveRemote) and counts them with its own
// (answers).

// RemoteAnswers summarises the answers of the proxies of one node that
// another replica serves, to one publication. Replicas send their own
// summary for each node they serve, replacing the last one; the engine
// judges a publication on its own proxies and every replica's summary for
// the same version together.
type RemoteAnswers struct {
	// Version is the Publication.Version answered; a summary of another
	// version is not counted.
	Version string
	// Population counts the owner's own proxies that answer for the node
	// there: connected, or gone after rejecting the publication.
	Population int
	Accepted   int
	Rejected   int
	// GuestPopulation, GuestAccepted and GuestRejected count the same of
	// the owner's guests (proxies of other tenants, Options.TenantOf).
	GuestPopulation int
	GuestAccepted   int
	GuestRejected   int
	// Rejections are the first rejections, with the proxies' own text,
	// the owner's own before its guests'.
	Rejections []ProxyRejection
}

// proxies counts every proxy the summary speaks for.
func (a RemoteAnswers) proxies() int { return a.Population + a.GuestPopulation }

// ObserveRemote takes the answers gathered by another replica, replacing
// that replica's last summary for node, and judges the node's publication
// again. A summary with no population withdraws the replica (it stopped
// serving the node).
func (e *Engine) ObserveRemote(ctx context.Context, node, replica string, a RemoteAnswers) {
	n, release := e.lockNode(ctx, node, false)
	defer release()
	if n == nil {
		return
	}
	if a.proxies() == 0 {
		delete(n.remote, replica)
	} else {
		a.Rejections = slices.Clone(a.Rejections)
		n.remote[replica] = a
	}
	if !e.following {
		e.evaluate(ctx, n, e.clock.Now())
	}
}

// answers is the tally the node's current publication is judged on, over
// its own proxies and the other replicas' summaries (standing.counted),
// and the rejections in it, sorted by proxy. A summary of another version
// counts its proxies as not having answered yet: the replica has not
// served them the publication, or not heard back, so the verdict waits for
// them (until the answer timeout).
func (n *nodeState) answers() (tally, []ProxyRejection) {
	s, rej := n.standing()
	t, guests := s.counted()
	rej = slices.DeleteFunc(rej, func(r ProxyRejection) bool { return r.Guest != guests })
	return t, rej
}

// standing is the node's tally over its own proxies and the other
// replicas' summaries, guests apart, and every rejection, sorted by proxy.
func (n *nodeState) standing() (standing, []ProxyRejection) {
	owner := n.ownerTenant()
	s, rej := n.track.tally(owner), n.track.rejections(owner)
	for _, r := range n.remote {
		s.own.Population += r.Population
		s.guests.Population += r.GuestPopulation
		if r.Version == "" || r.Version != n.track.version {
			continue
		}
		s.own.Accepted += r.Accepted
		s.own.Rejected += r.Rejected
		s.guests.Accepted += r.GuestAccepted
		s.guests.Rejected += r.GuestRejected
		rej = append(rej, r.Rejections...)
	}
	slices.SortFunc(rej, func(a, b ProxyRejection) int { return strings.Compare(a.Proxy, b.Proxy) })
	return s, rej
}

// elsewhere counts the proxies other replicas report for the node.
func (n *nodeState) elsewhere() int {
	c := 0
	for _, r := range n.remote {
		c += r.proxies()
	}
	return c
}

// maxSummaryRejections bounds the rejections a replica's summary of one
// node carries (the counts stay whole).
const maxSummaryRejections = 5

// LocalAnswers summarises, per node with a publication in place, how this
// replica's own proxies answered it: what a follower sends the leader.
// Only nodes with a proxy here, or a rejection kept, are listed.
func (e *Engine) LocalAnswers() map[string]RemoteAnswers {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]RemoteAnswers{}
	for id, n := range e.nodes {
		if n.track.version == "" {
			continue
		}
		owner := n.ownerTenant()
		s := n.track.tally(owner)
		if s.own.Population+s.guests.Population == 0 {
			continue
		}
		// The owner's own rejections first: they are the ones the leader
		// judges on whenever there are any.
		rej := n.track.rejections(owner)
		slices.SortStableFunc(rej, func(a, b ProxyRejection) int { return compareBool(a.Guest, b.Guest) })
		out[id] = RemoteAnswers{
			Version:    n.track.version,
			Population: s.own.Population, Accepted: s.own.Accepted, Rejected: s.own.Rejected,
			GuestPopulation: s.guests.Population, GuestAccepted: s.guests.Accepted, GuestRejected: s.guests.Rejected,
			Rejections: rej[:min(len(rej), maxSummaryRejections)],
		}
	}
	return out
}

// SameAnswers reports whether two summaries say the same.
func SameAnswers(a, b RemoteAnswers) bool {
	return a.Version == b.Version && a.Population == b.Population && a.Accepted == b.Accepted && a.Rejected == b.Rejected &&
		a.GuestPopulation == b.GuestPopulation && a.GuestAccepted == b.GuestAccepted && a.GuestRejected == b.GuestRejected &&
		slices.Equal(a.Rejections, b.Rejections)
}

// compareBool orders false before true.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	default:
		return -1
	}
}
