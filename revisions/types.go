package revisions

import (
	"errors"
	"time"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/sources"
)

// State is the publication state of a node ID.
type State string

const (
	// StatePending: the newest revision is published and the node's proxies
	// have not all answered yet.
	StatePending State = "Pending"
	// StateInSync: the newest revision is published and accepted.
	StateInSync State = "InSync"
	// StateDegraded: the newest revision is published and some, but fewer
	// than the taint threshold, of the node's proxies rejected it.
	StateDegraded State = "Degraded"
	// StateRollback: newer revisions are tainted, so an older untainted one
	// is published.
	StateRollback State = "Rollback"
	// StateRollbackFailed: every revision in the history is tainted; the
	// publication in place is left as it is.
	StateRollbackFailed State = "RollbackFailed"
	// StateProgressing: a progressive rollout of the newest revision is
	// under way; part of the node's proxies are served it.
	StateProgressing State = "Progressing"
)

// allStates lists every state, for the per-node state gauge.
var allStates = []State{StatePending, StateInSync, StateDegraded, StateRollback, StateRollbackFailed, StateProgressing}

// Revision is one rendered configuration of one node ID. Equal content gives
// an equal Hash and so the same revision, whatever commit produced it.
type Revision struct {
	Node string `json:"node"`
	// Hash is the content hash (render.NodeConfig.Hash).
	Hash string `json:"hash"`
	// Origin is where the content came from most recently: re-applying the
	// same content from a newer commit updates it.
	Origin sources.Origin `json:"origin"`
	// Config is the rendered content.
	Config *render.NodeConfig `json:"config"`
	// CreatedAt is when the content was first applied.
	CreatedAt time.Time `json:"createdAt"`
	// PublishedAt is when it was last published; zero if never.
	PublishedAt time.Time `json:"publishedAt,omitzero"`
	// Taint is set when the node's proxies (or the xDS server) rejected it.
	Taint *Taint `json:"taint,omitempty"`
}

// Taint records who rejected a revision, when, and why.
type Taint struct {
	At      time.Time        `json:"at"`
	Proxies []ProxyRejection `json:"proxies,omitempty"`
	// Message is a one-line summary for people, carrying the proxies' own
	// error text.
	Message string `json:"message"`
}

// ProxyRejection is one proxy's NACK of a publication.
type ProxyRejection struct {
	Proxy string `json:"proxy"`
	Error string `json:"error"`
	// Guest: the proxy is of another tenant than the node's owner.
	Guest bool `json:"guest,omitempty"`
}

// Publisher hands a publication to the xDS server. It returns an error when
// the server refuses the publication (for example an inconsistent set); the
// engine then taints the revision. An error made by NotReady says instead
// that something outside the configuration is missing for now (an external
// secret not yet created); the engine then keeps serving what it served,
// reports the wait and tries again every TickInterval.
//
// Publish is called for different nodes concurrently, for one node one
// call at a time and in the order the engine decided, and never while the
// engine holds a lock that ObserveProxy or its reads (Node, Nodes) need: it
// may take its time (read a Secret from an API server) without holding up
// other nodes or the status API.
type Publisher interface {
	Publish(node string, pub Publication) error
}

// ErrNotReady matches the errors made by NotReady.
var ErrNotReady = errors.New("not ready")

// NotReady marks err as a wait rather than a fault of the revision: the
// engine does not taint a revision whose publication fails with it. Its
// message is err's.
func NotReady(err error) error { return notReady{err} }

type notReady struct{ err error }

func (e notReady) Error() string        { return e.err.Error() }
func (e notReady) Unwrap() error        { return e.err }
func (e notReady) Is(target error) bool { return target == ErrNotReady }

// PublisherFunc adapts a function to Publisher.
type PublisherFunc func(node string, pub Publication) error

// Publish calls f.
func (f PublisherFunc) Publish(node string, pub Publication) error { return f(node, pub) }

// Publication is what the xDS server serves to one node ID.
type Publication struct {
	// Version is unique per publication of a node: "<hash12>-<generation>".
	Version string
	// Owner is the source that owns the node (NodeRecord.Owner) when the
	// publication is made; the xDS server checks, before every push, that
	// a stream may receive a node of that owner.
	Owner string
	// Types maps an xDS type URL to its resources. Once a type has been
	// published to a node it stays in every later publication, with no
	// resources when the content no longer has any; a type never published
	// is absent. The resource slices are shared and must not be modified.
	Types map[string]PublishedType
	// ExternalSecrets are the revision's secrets whose key material the
	// home supplies (render.NodeConfig.ExternalSecrets, shared: do not
	// modify). They name the secrets only; the home reads the key material
	// when it serves the publication.
	ExternalSecrets []render.ExternalSecret
	// ExternalEndpoints are the load assignments the home builds
	// (render.NodeConfig.ExternalEndpoints, shared: do not modify).
	ExternalEndpoints []render.ExternalEndpoints
	// Candidate, during a progressive rollout, is the publication of the
	// candidate revision: the xDS server serves it instead of this one to
	// the proxies whose bucket (rollout.ProxyBucket) is below
	// CandidateShare, in basis points. nil without a rollout.
	Candidate      *Publication
	CandidateShare int
}

// PublishedType is the resource set of one type in a publication.
type PublishedType struct {
	// Version is the per-type version. It stays the same across
	// publications while the type's content is unchanged, except that a
	// rollback gives every type a fresh version.
	Version string
	// Resources are sorted by name.
	Resources []render.Resource
}

// ProxyEventKind says what a proxy did.
type ProxyEventKind string

const (
	ProxyConnected    ProxyEventKind = "Connected"
	ProxyDisconnected ProxyEventKind = "Disconnected"
	ProxyACK          ProxyEventKind = "ACK"
	ProxyNACK         ProxyEventKind = "NACK"
)

func (k ProxyEventKind) String() string { return string(k) }

// ProxyEvent is one report from the xDS server about a proxy's stream.
type ProxyEvent struct {
	Kind ProxyEventKind `json:"kind"`
	// Node is the proxy's node ID.
	Node string `json:"node"`
	// Proxy identifies the proxy within the node (pod name or a stream id).
	Proxy string `json:"proxy"`
	// TypeURL and TypeVersion name the answered response (ACK/NACK only).
	TypeURL     string `json:"typeURL,omitempty"`
	TypeVersion string `json:"typeVersion,omitempty"`
	// SnapshotVersion is the Publication.Version the answered response was
	// built from, matched by nonce.
	SnapshotVersion string `json:"snapshotVersion,omitempty"`
	// Error is the proxy's own error text (NACK only).
	Error string `json:"error,omitempty"`
	// Bucket is the proxy's rollout bucket (rollout.ProxyBucket), set on
	// Connected: which side of a rollout's split the proxy is served.
	Bucket int `json:"bucket,omitempty"`
	// Tenant is the tenant the proxy's credentials name (in a cluster, the
	// namespace its certificate was issued in), on every event of the
	// stream; "" when they name none (standalone, the operator's own
	// certificates). A proxy of another tenant than the node's owner is
	// the owner's guest (see Options.TenantOf).
	Tenant string `json:"tenant,omitempty"`
	// Outstanding counts responses sent to the proxy not answered yet.
	Outstanding int       `json:"outstanding"`
	Time        time.Time `json:"time"`

	// analysis carries a rollout analysis's verdict to the engine's loop
	// (kind analysisDone); never set by the xDS server.
	analysis *analysisDoneEvent
}
