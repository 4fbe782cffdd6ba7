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
	// Population counts the proxies that answer for the node there:
	// connected, or gone after rejecting the publication.
	Population int
	Accepted   int
	Rejected   int
	// Rejections are the first rejections, with the proxies' own text.
	Rejections []ProxyRejection
}

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
	if a.Population == 0 {
		delete(n.remote, replica)
	} else {
		a.Rejections = slices.Clone(a.Rejections)
		n.remote[replica] = a
	}
	if !e.following {
		e.evaluate(ctx, n, e.clock.Now())
	}
}

// answers is the tally of the node's current publication over its own
// proxies and the other replicas' summaries, and the rejections, sorted by
// proxy. A summary of another version counts its proxies as not having
// answered yet: the replica has not served them the publication, or not
// heard back, so the verdict waits for them (until the answer timeout).
func (n *nodeState) answers() (tally, []ProxyRejection) {
	t, rej := n.track.tally(), n.track.rejections()
	for _, r := range n.remote {
		t.Population += r.Population
		if r.Version == "" || r.Version != n.track.version {
			continue
		}
		t.Accepted += r.Accepted
		t.Rejected += r.Rejected
		rej = append(rej, r.Rejections...)
	}
	slices.SortFunc(rej, func(a, b ProxyRejection) int { return strings.Compare(a.Proxy, b.Proxy) })
	return t, rej
}

// elsewhere counts the proxies other replicas report for the node.
func (n *nodeState) elsewhere() int {
	c := 0
	for _, r := range n.remote {
		c += r.Population
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
		t := n.track.tally()
		if t.Population == 0 {
			continue
		}
		rej := n.track.rejections()
		out[id] = RemoteAnswers{
			Version: n.track.version, Population: t.Population, Accepted: t.Accepted, Rejected: t.Rejected,
			Rejections: rej[:min(len(rej), maxSummaryRejections)],
		}
	}
	return out
}

// SameAnswers reports whether two summaries say the same.
func SameAnswers(a, b RemoteAnswers) bool {
	return a.Version == b.Version && a.Population == b.Population && a.Accepted == b.Accepted && a.Rejected == b.Rejected &&
		slices.EqualFunc(a.Rejections, b.Rejections, func(x, y ProxyRejection) bool {
			return x.Proxy == y.Proxy && x.Error == y.Error
		})
}
