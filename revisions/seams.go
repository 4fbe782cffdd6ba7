package revisions

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"github.com/legate-dev/legate/render"
)

// PublicationOf rebuilds, from what a store holds, the publication the
// engine made of rev under rec: the same version and per-type versions, so
// a replica that follows the store serves exactly what the writer
// published and a proxy that reconnects to it sees no change. rev must be
// the revision rec publishes (rec.Published).
func PublicationOf(rec NodeRecord, rev *Revision) (Publication, error) {
	if rec.Published == "" || rev == nil || rev.Hash != rec.Published || rev.Config == nil {
		return Publication{}, fmt.Errorf("node %q publishes %q: the revision given is not it", rec.Node, rec.Published)
	}
	return publication(rec.Owner, rev.Config, rec.Version, rec.Types), nil
}

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

// DefaultMaxRevisionBytes bounds a revision's encoded content when the
// store says nothing (see SizeLimit).
const DefaultMaxRevisionBytes = 64 << 20

// checkSize refuses a configuration larger than the store can hold.
func (e *Engine) checkSize(node string, cfg *render.NodeConfig) error {
	size, limit := EncodedSize(cfg), DefaultMaxRevisionBytes
	if l, ok := e.store.(SizeLimit); ok {
		size, limit = l.RevisionSize(cfg)
	}
	if size > limit {
		return fmt.Errorf("the configuration of node %q takes %d bytes encoded; the revision store holds at most %d per revision: split the node's configuration or shrink it", node, size, limit)
	}
	return nil
}

// EncodedSize estimates, from above, the size of cfg as a store encodes
// it (JSON, bodies in base64), without encoding it.
func EncodedSize(cfg *render.NodeConfig) int {
	const overhead = 96 // field names, quotes, position numbers
	size := overhead + len(cfg.NodeID) + len(cfg.Hash)
	for url, set := range cfg.Types {
		size += overhead + len(url) + len(set.Hash)
		for _, r := range set.Resources {
			size += overhead + len(r.Name) + base64.StdEncoding.EncodedLen(len(r.Body)) + len(r.Source.File)
		}
	}
	for _, x := range cfg.ExternalSecrets {
		size += overhead + len(x.Name) + len(x.Ref) + len(x.Key) + len(x.Kind) + len(x.Source.File)
	}
	for _, x := range cfg.ExternalEndpoints {
		size += overhead + len(x.ClusterName) + len(x.Namespace) + len(x.Selector) + len(x.TargetPort) + len(x.Source.File)
	}
	return size
}

// publication builds what the Publisher receives.
func publication(owner string, cfg *render.NodeConfig, version string, types map[string]TypeVersion) Publication {
	p := Publication{Version: version, Owner: owner, Types: make(map[string]PublishedType, len(types)), ExternalSecrets: cfg.ExternalSecrets, ExternalEndpoints: cfg.ExternalEndpoints}
	for url, tv := range types {
		p.Types[url] = PublishedType{Version: tv.Version, Resources: cfg.Types[url].Resources}
	}
	return p
}
