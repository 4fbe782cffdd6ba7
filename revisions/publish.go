package revisions

import (
	"errors"
	"fmt"
	"time"

	"github.com/legate-dev/legate/logging"
	"github.com/legate-dev/legate/render"
)

// Publishing: the publish rule's choice is made into a Publication
// (publication), handed to the Publisher outside the engine's lock
// (publish), and its answer recorded (published, refused, or a wait).

// publish hands pub to the Publisher with mu released (the home may read
// a Secret from an API server meanwhile) and takes mu again. Called with
// n.op and mu held.
func (e *Engine) publish(node string, pub Publication) error {
	e.unlock()
	defer e.mu.Lock()
	return e.publisher.Publish(node, pub)
}

// reconcile publishes what the publish rule chooses, tainting revisions the
// Publisher refuses; one it cannot serve yet (NotReady) waits instead.
// force re-publishes even an unchanged choice; announce
// reports the publication's outcomes. Called with n.op and mu held; mu is
// released while the Publisher works.
func (e *Engine) reconcile(n *nodeState, now time.Time, force, announce bool) {
	prev := n.waiting
	n.waiting = nil
	notReady := map[string]bool{} // revisions whose publication waits, in this call
	retaken, report := force, announce
	for {
		c := choose(n.candidates(notReady))
		if e.rollouts != nil || n.rec.Rollout != nil {
			handled, end := e.reconcileRollout(n, c, now)
			if handled {
				return
			}
			// A split that ends without promotion is not left served.
			retaken = retaken || end
		}
		served := n.revs[n.rec.Published]
		plan := planPublish(c, n.rec.Published, served != nil && served.Taint != nil, retaken)
		n.base = c.State
		if !plan.Publish {
			e.settle(n)
			return
		}
		rev := n.revs[plan.Hash]
		generation := n.rec.Generation + 1
		version, types := assignVersions(rev.Config, n.rec.Types, generation, plan.Fresh)
		err := e.publish(rev.Node, publication(n.rec.Owner, rev.Config, version, types))
		switch {
		case errors.Is(err, ErrNotReady):
			if n.waiting == nil {
				e.wait(n, prev, rev, err.Error(), now, report)
			}
			if n.rec.Published != "" {
				return // keep serving what is served
			}
			// Nothing is served (a restart): serve the newest older
			// revision that can be, rather than nothing, without
			// reporting it to its origin again.
			notReady[rev.Hash] = true
			report = false
		case err != nil:
			// The server saw these versions: they are not handed out again.
			n.rec.Generation = generation
			e.refused(n, rev, err, now)
			retaken = false
		default:
			n.rec.Generation = generation
			e.published(n, rev, version, types, now, report, c.State == StateRollback && len(notReady) == 0)
			return
		}
	}
}

// refused taints a revision the xDS server would not take.
func (e *Engine) refused(n *nodeState, rev *Revision, err error, now time.Time) {
	e.log.Error(err, "xDS server refused a revision; tainting it", "node", rev.Node, "revision", rev.Hash)
	rev.Taint = &Taint{At: now, Message: "the xDS server refused the revision: " + err.Error()}
	n.changed[rev.Hash] = true
	e.metrics.taints.WithLabelValues(render.NodeLabel(rev.Node)).Inc()
	e.emit(Outcome{Node: rev.Node, Hash: rev.Hash, Origin: rev.Origin, Status: OutcomeFailure, Description: rev.Taint.Message, Time: now})
}

// published records that rev is served under version and starts waiting
// for its proxies' answers; the verdict may already be in (nobody
// connected, or a timeout of 0).
func (e *Engine) published(n *nodeState, rev *Revision, version string, types map[string]TypeVersion, now time.Time, announce, rollback bool) {
	n.rec.Published, n.rec.Version, n.rec.Types = rev.Hash, version, types
	rev.PublishedAt = now
	n.changed[rev.Hash] = true
	n.track.reset(version, now)
	n.verdict = verdictPending
	n.announce, n.finalSent = announce, false
	e.metrics.publishes.WithLabelValues(render.NodeLabel(rev.Node)).Inc()
	if rollback {
		e.metrics.rollbacks.WithLabelValues(render.NodeLabel(rev.Node)).Inc()
		logging.Warn(e.log, "rolled back to the newest untainted revision", "node", rev.Node, "revision", rev.Hash, "commit", rev.Origin.Commit, "version", version)
	}
	e.settle(n)
	if announce {
		e.emit(e.outcome(n, rev, OutcomePending, pendingText(n), now))
	}
}

// publication builds what the Publisher receives.
func publication(owner string, cfg *render.NodeConfig, version string, types map[string]TypeVersion) Publication {
	p := Publication{Version: version, Owner: owner, Types: make(map[string]PublishedType, len(types)), ExternalSecrets: cfg.ExternalSecrets, ExternalEndpoints: cfg.ExternalEndpoints}
	for url, tv := range types {
		p.Types[url] = PublishedType{Version: tv.Version, Resources: cfg.Types[url].Resources}
	}
	return p
}

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
