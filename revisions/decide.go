package revisions

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/legate-dev/legate/render"
)

// This file holds the engine's decisions as pure functions: no clock, no
// store, no goroutines. The Engine feeds them and applies their answers.

// candidate is what the publish rule needs to know about a revision.
type candidate struct {
	Hash    string
	Tainted bool
}

// choice is the answer of the publish rule.
type choice struct {
	// Hash is the revision that should be published. It is empty when the
	// publication in place must be left alone (every revision tainted, or
	// no history).
	Hash string
	// State is the node's base state: InSync, Rollback or RollbackFailed
	// (Pending and Degraded refine InSync once proxies answer).
	State State
}

// choose applies the publish rule to a history ordered newest first: the
// newest untainted revision is published; if it is the newest revision the
// node is InSync, otherwise it is in Rollback. When every revision is
// tainted the node is RollbackFailed and nothing new is published: the
// publication in place (the newest revision that was served) stays.
func choose(history []candidate) choice {
	if len(history) == 0 {
		return choice{}
	}
	for i, c := range history {
		if c.Tainted {
			continue
		}
		if i == 0 {
			return choice{Hash: c.Hash, State: StateInSync}
		}
		return choice{Hash: c.Hash, State: StateRollback}
	}
	return choice{State: StateRollbackFailed}
}

// publishPlan says whether and how to publish after a decision.
type publishPlan struct {
	Publish bool
	Hash    string
	// Fresh gives every type a new version, so that proxies that applied
	// part of a rejected update receive the whole content again.
	Fresh bool
}

// planPublish turns a choice into an action. published is the hash served
// now ("" if none) and publishedTainted whether it has been rejected since.
// force re-publishes the chosen revision even when it is already served
// (after a restart, or when its taint is cleared), always with fresh
// versions.
func planPublish(c choice, published string, publishedTainted, force bool) publishPlan {
	if c.Hash == "" {
		return publishPlan{}
	}
	if c.Hash == published && !force {
		return publishPlan{}
	}
	return publishPlan{Publish: true, Hash: c.Hash, Fresh: force || publishedTainted}
}

// moveToTop returns history with hash first and the other entries in their
// order: a new revision is added on top, and re-applying older content moves
// its revision to the top.
func moveToTop(history []string, hash string) []string {
	out := make([]string, 0, len(history)+1)
	out = append(out, hash)
	for _, h := range history {
		if h != hash {
			out = append(out, h)
		}
	}
	return out
}

// prune splits a history (newest first) into the entries to keep and to
// drop so that at most limit remain. The published revision is never
// dropped: if it lies beyond the limit it is kept as an extra entry.
func prune(history []string, published string, limit int) (keep, drop []string) {
	if limit < 1 {
		limit = 1
	}
	for i, h := range history {
		if i < limit || h == published {
			keep = append(keep, h)
			continue
		}
		drop = append(drop, h)
	}
	return keep, drop
}

// TypeVersion is the version and content hash of one published type.
type TypeVersion struct {
	Version string `json:"version"`
	Hash    string `json:"hash"`
}

// assignVersions computes the versions of a publication of cfg as the
// node's publication number gen. A type keeps the version it has in prev
// when its content hash is unchanged, unless fresh is set; every other type
// gets "<typehash12>-<gen>". A type published before but absent from cfg
// stays in the answer with an empty hash (and version "empty-<gen>"), so
// the server sends proxies an empty set instead of leaving the old one. The
// overall version is "<hash12>-<gen>".
func assignVersions(cfg *render.NodeConfig, prev map[string]TypeVersion, gen uint64, fresh bool) (string, map[string]TypeVersion) {
	g := strconv.FormatUint(gen, 10)
	types := make(map[string]TypeVersion, max(len(cfg.Types), len(prev)))
	version := func(url, hash string) TypeVersion {
		if p, ok := prev[url]; ok && !fresh && p.Hash == hash {
			return p
		}
		if hash == "" {
			return TypeVersion{Version: "empty-" + g}
		}
		return TypeVersion{Version: Short(hash) + "-" + g, Hash: hash}
	}
	for url, set := range cfg.Types {
		types[url] = version(url, set.Hash)
	}
	for url := range prev {
		if _, ok := cfg.Types[url]; !ok {
			types[url] = version(url, "")
		}
	}
	return Short(cfg.Hash) + "-" + g, types
}

// Short abbreviates a content hash or a commit SHA to its first 12
// characters, the form legate shows them in.
func Short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

// tally counts the answers of a node's proxies to the current publication.
type tally struct {
	// Population is every connected proxy plus every proxy that rejected
	// the publication (a rejection counts even after a disconnect).
	Population int
	Accepted   int
	Rejected   int
}

// standing is a node's tally split by whose proxies answer: the owner's
// own, and its guests, proxies of other tenants it shares the node with
// (Options.TenantOf).
type standing struct {
	own, guests tally
}

// counted is the tally the verdict is taken from, and whether it is the
// guests': the owner's own proxies whenever any of them answers for the
// node, so that a tenant's proxies can neither trigger nor hold back the
// rollback of the platform's configuration; the guests' when the owner
// runs none, so that a configuration the platform shares with tenants who
// alone run it is still rolled back when their proxies reject it.
func (s standing) counted() (tally, bool) {
	if s.own.Population > 0 || s.guests.Population == 0 {
		return s.own, false
	}
	return s.guests, true
}

// verdict is the judgement of a publication from its proxies' answers.
type verdict int

const (
	verdictPending  verdict = iota // not every proxy has answered, or nobody is there
	verdictAccepted                // every answer is an acceptance
	verdictDegraded                // some rejected, fewer than the threshold
	verdictTainted                 // the share that rejected reaches the threshold
)

func (v verdict) String() string {
	switch v {
	case verdictAccepted:
		return "accepted"
	case verdictDegraded:
		return "degraded"
	case verdictTainted:
		return "tainted"
	default:
		return "pending"
	}
}

// judge applies the taint rule. The publication is judged once every proxy
// has answered, or once timedOut (the answer timeout has passed since it
// was published), whichever comes first; until then it is pending. Then it
// is tainted when the share of proxies that rejected it reaches threshold
// (0 < threshold <= 1), degraded when some but fewer rejected, and accepted
// when none rejected and at least one accepted. With nobody to answer it
// stays pending. Judging goes on while the publication is in place, so a
// proxy that connects later and rejects it counts too.
func judge(t tally, threshold float64, timedOut bool) verdict {
	if t.Population == 0 {
		return verdictPending
	}
	if t.Accepted+t.Rejected < t.Population && !timedOut {
		return verdictPending
	}
	if t.Rejected > 0 {
		// The epsilon keeps 2 of 3 at a threshold of 0.6666… from rounding the
		// wrong way.
		if float64(t.Rejected) >= threshold*float64(t.Population)-1e-9 {
			return verdictTainted
		}
		return verdictDegraded
	}
	if t.Accepted > 0 {
		return verdictAccepted
	}
	return verdictPending
}

// combineState combines the base state of the publish rule with the verdict on
// the current publication.
func combineState(base State, v verdict) State {
	if base != StateInSync {
		return base
	}
	switch v {
	case verdictAccepted:
		return StateInSync
	case verdictDegraded:
		return StateDegraded
	default:
		return StatePending
	}
}

// taintMessage summarizes rejections for people: who rejected out of how
// many, with the first proxy's own error text.
func taintMessage(rejected []ProxyRejection, population int) string {
	if len(rejected) == 0 {
		return ""
	}
	rs := slices.Clone(rejected)
	slices.SortFunc(rs, func(a, b ProxyRejection) int {
		switch {
		case a.Proxy < b.Proxy:
			return -1
		case a.Proxy > b.Proxy:
			return 1
		}
		return 0
	})
	msg := fmt.Sprintf("rejected by %d of %d proxies; %s: %s", len(rs), population, rs[0].Proxy, rs[0].Error)
	if len(rs) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(rs)-1)
	}
	return msg
}
