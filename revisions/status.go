package revisions

import (
	"slices"
	"time"
)

// NodeStatus is the state of one node ID for the status API.
type NodeStatus struct {
	NodeID string `json:"nodeID"`
	State  State  `json:"state"`
	// Published is the revision served now; nil when nothing is.
	Published *PublishedStatus `json:"published,omitempty"`
	// History is newest first.
	History []RevisionStatus `json:"history"`
	// Answers counts the proxies' answers to the current publication.
	Answers AnswerCounts `json:"answers"`
	// Waiting is the revision chosen to be served next that the home
	// cannot serve yet (an external secret that does not exist), and why.
	Waiting *WaitingStatus `json:"waiting,omitempty"`
}

// WaitingStatus names a revision that waits to be served.
type WaitingStatus struct {
	Hash     string    `json:"hash"`
	Commit   string    `json:"commit,omitempty"`
	Revision string    `json:"revision,omitempty"`
	Message  string    `json:"message"`
	Since    time.Time `json:"since"`
}

// PublishedStatus names the revision served to a node.
type PublishedStatus struct {
	Hash    string `json:"hash"`
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	// Revision is the origin in Flux's form, e.g. "main@sha1:<sha>".
	Revision string `json:"revision,omitempty"`
	Source   string `json:"source,omitempty"`
}

// RevisionStatus is one history entry.
type RevisionStatus struct {
	Hash     string `json:"hash"`
	Commit   string `json:"commit,omitempty"`
	Revision string `json:"revision,omitempty"`
	Source   string `json:"source,omitempty"`
	// Author and Message describe the commit, when the source knows them.
	Author      string     `json:"author,omitempty"`
	Message     string     `json:"message,omitempty"`
	CreatedAt   time.Time  `json:"createdAt"`
	PublishedAt *time.Time `json:"publishedAt,omitempty"`
	Tainted     bool       `json:"tainted"`
	Taint       *Taint     `json:"taint,omitempty"`
}

// AnswerCounts summarizes the proxies' answers to the current publication.
type AnswerCounts struct {
	Connected int `json:"connected"`
	Accepted  int `json:"accepted"`
	Rejected  int `json:"rejected"`
	// Elsewhere counts the proxies that other replicas serve and report
	// on (see Engine.ObserveRemote); Accepted and Rejected include theirs.
	Elsewhere int `json:"elsewhere,omitempty"`
	// GuestsAside counts the proxies of other tenants the node is shared
	// with whose answers do not count now: the owner's own proxies answer
	// for it (see Options.TenantOf). Accepted and Rejected leave them out.
	GuestsAside int `json:"guestsAside,omitempty"`
}

// Nodes returns the status of every node with a history, sorted by node ID.
func (e *Engine) Nodes() []NodeStatus {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]NodeStatus, 0, len(e.nodes))
	for _, n := range e.nodes {
		if len(n.rec.History) > 0 {
			out = append(out, n.status())
		}
	}
	slices.SortFunc(out, func(a, b NodeStatus) int {
		switch {
		case a.NodeID < b.NodeID:
			return -1
		case a.NodeID > b.NodeID:
			return 1
		}
		return 0
	})
	return out
}

// Node returns the status of one node ID.
func (e *Engine) Node(id string) (NodeStatus, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := e.nodes[id]
	if n == nil || len(n.rec.History) == 0 {
		return NodeStatus{}, false
	}
	return n.status(), true
}

func (n *nodeState) status() NodeStatus {
	all, _ := n.standing()
	t, guests := all.counted()
	s := NodeStatus{
		NodeID:  n.rec.Node,
		State:   n.state,
		History: make([]RevisionStatus, 0, len(n.rec.History)),
		Answers: AnswerCounts{Connected: n.track.connected(), Accepted: t.Accepted, Rejected: t.Rejected, Elsewhere: n.elsewhere()},
	}
	if !guests {
		s.Answers.GuestsAside = all.guests.Population
	}
	if r := n.revs[n.rec.Published]; r != nil {
		s.Published = &PublishedStatus{
			Hash: r.Hash, Version: n.rec.Version, Commit: r.Origin.Commit,
			Revision: r.Origin.Revision(), Source: r.Origin.Source,
		}
	}
	if w := n.waiting; w != nil {
		if r := n.revs[w.hash]; r != nil {
			s.Waiting = &WaitingStatus{Hash: r.Hash, Commit: r.Origin.Commit, Revision: r.Origin.Revision(), Message: w.message, Since: w.since}
		}
	}
	for _, h := range n.rec.History {
		r := n.revs[h]
		rs := RevisionStatus{
			Hash: r.Hash, Commit: r.Origin.Commit, Revision: r.Origin.Revision(), Source: r.Origin.Source,
			Author: r.Origin.Author, Message: r.Origin.Message, CreatedAt: r.CreatedAt, Tainted: r.Taint != nil,
		}
		if !r.PublishedAt.IsZero() {
			at := r.PublishedAt
			rs.PublishedAt = &at
		}
		if r.Taint != nil {
			tc := *r.Taint
			tc.Proxies = slices.Clone(r.Taint.Proxies)
			rs.Taint = &tc
		}
		s.History = append(s.History, rs)
	}
	return s
}

// Revision returns a copy of one revision of node (its Config is shared
// and must not be modified) and whether it is the one served.
func (e *Engine) Revision(node, hash string) (rev Revision, served, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := e.nodes[node]
	if n == nil || n.revs[hash] == nil {
		return Revision{}, false, false
	}
	r := *n.revs[hash]
	if r.Taint != nil {
		tc := *r.Taint
		tc.Proxies = slices.Clone(r.Taint.Proxies)
		r.Taint = &tc
	}
	return r, n.rec.Published == hash, true
}
