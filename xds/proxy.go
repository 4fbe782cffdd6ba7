package xds

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/legate-dev/legate/revisions"
)

// Event is one thing a proxy did on its stream. It is the revision
// engine's own type, so the engine takes the server's events as they are.
type Event = revisions.ProxyEvent

// EventKind says what a proxy did.
type EventKind = revisions.ProxyEventKind

// The kinds of Event.
const (
	Connected    = revisions.ProxyConnected
	Disconnected = revisions.ProxyDisconnected
	ACK          = revisions.ProxyACK
	NACK         = revisions.ProxyNACK
)

// Observer receives proxy events. ObserveProxy is called concurrently from
// stream goroutines and must not block for long.
type Observer interface {
	ObserveProxy(ev Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(ev Event)

// ObserveProxy calls f(ev).
func (f ObserverFunc) ObserveProxy(ev Event) { f(ev) }

// ProxyStatus is what the server knows about one connected stream.
type ProxyStatus struct {
	Proxy string `json:"proxy"`
	Node  string `json:"node"`
	// Stream is "sotw" or "delta".
	Stream string `json:"stream"`
	// Identity is the principal of the client certificate (mutual TLS
	// with node binding); empty otherwise.
	Identity string `json:"identity,omitempty"`
	// Address is the proxy's peer address as the server sees it.
	Address string `json:"address,omitempty"`
	// UserAgent is node.user_agent_name and its version ("envoy 1.36.0").
	UserAgent      string    `json:"userAgent,omitempty"`
	ConnectedSince time.Time `json:"connectedSince"`
	Outstanding    int       `json:"outstanding"`
	// Compared is the newest snapshot version the stream has compared
	// every type the proxy subscribes to with: what the proxy is served,
	// or about to be, comes from it.
	Compared string       `json:"compared,omitempty"`
	Types    []TypeStatus `json:"types"`
}

// TypeStatus is one type of a proxy's stream.
type TypeStatus struct {
	TypeURL string `json:"typeURL"`
	// SentVersion, SentNonce and SentSnapshot describe the last response.
	SentVersion  string    `json:"sentVersion,omitempty"`
	SentNonce    string    `json:"sentNonce,omitempty"`
	SentSnapshot string    `json:"sentSnapshot,omitempty"`
	SentAt       time.Time `json:"sentAt,omitzero"`
	// AckedVersion and AckedSnapshot describe the last response ACKed.
	AckedVersion  string      `json:"ackedVersion,omitempty"`
	AckedSnapshot string      `json:"ackedSnapshot,omitempty"`
	AckedAt       time.Time   `json:"ackedAt,omitzero"`
	LastNACK      *NACKStatus `json:"lastNack,omitempty"`
}

// NACKStatus is the last rejection of a type by a proxy.
type NACKStatus struct {
	Version         string    `json:"version"`
	SnapshotVersion string    `json:"snapshotVersion"`
	Error           string    `json:"error"`
	Time            time.Time `json:"time"`
}

// maxRejected bounds the rejected versions remembered per stream and type.
const maxRejected = 16

// sent is a response the proxy has not answered yet.
type sent struct {
	seq         uint64
	nonce       string
	version     string
	snapVersion string
	names       []string // delta only: resources the response carried
}

// typeTrack is a stream's bookkeeping for one type.
type typeTrack struct {
	status   TypeStatus
	lastSeq  uint64 // sequence of the last response sent
	pending  []sent
	rejected []string
}

// tracker is the per-stream record behind ProxyStatus and events. Its
// mutex is taken by the stream goroutine and by status readers.
type tracker struct {
	proxy, node, kind string
	since             time.Time
	peer              peerInfo

	mu       sync.Mutex
	types    map[string]*typeTrack
	seq      uint64
	compared string
}

func newTracker(proxy, node, kind string, since time.Time) *tracker {
	return &tracker{proxy: proxy, node: node, kind: kind, since: since, types: make(map[string]*typeTrack)}
}

func (t *tracker) typ(url string) *typeTrack {
	tt := t.types[url]
	if tt == nil {
		tt = &typeTrack{status: TypeStatus{TypeURL: url}}
		t.types[url] = tt
	}
	return tt
}

// recordSent notes a response and returns its nonce, unique in the stream.
func (t *tracker) recordSent(url, version, snapVersion string, names []string, now time.Time) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	nonce := formatNonce(t.seq)
	tt := t.typ(url)
	tt.lastSeq = t.seq
	tt.pending = append(tt.pending, sent{seq: t.seq, nonce: nonce, version: version, snapVersion: snapVersion, names: names})
	tt.status.SentVersion, tt.status.SentNonce, tt.status.SentSnapshot, tt.status.SentAt = version, nonce, snapVersion, now
	return nonce
}

// answer matches a request's response_nonce to the response it answers. It
// returns that response and whether one was found; latest says whether the
// nonce is the type's newest response (requests with stale nonces must not
// change subscriptions). Responses sent before the answered one are dropped
// from the outstanding list: a client answers in order.
func (t *tracker) answer(url, nonce string, nackMsg *string, now time.Time) (resp sent, found, latest bool, outstanding int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tt := t.typ(url)
	latest = tt.status.SentNonce == "" || tt.status.SentNonce == nonce
	for i, p := range tt.pending {
		if p.nonce != nonce {
			continue
		}
		resp, found = p, true
		tt.pending = slices.Delete(tt.pending, 0, i+1)
		break
	}
	if found {
		if nackMsg != nil {
			tt.status.LastNACK = &NACKStatus{Version: resp.version, SnapshotVersion: resp.snapVersion, Error: *nackMsg, Time: now}
			if !slices.Contains(tt.rejected, resp.version) {
				if len(tt.rejected) == maxRejected {
					tt.rejected = slices.Delete(tt.rejected, 0, 1)
				}
				tt.rejected = append(tt.rejected, resp.version)
			}
		} else {
			tt.status.AckedVersion, tt.status.AckedSnapshot, tt.status.AckedAt = resp.version, resp.snapVersion, now
		}
	}
	return resp, found, latest, t.outstandingLocked()
}

func (t *tracker) outstandingLocked() int {
	n := 0
	for _, tt := range t.types {
		n += len(tt.pending)
	}
	return n
}

// rejectedVersion reports whether the proxy NACKed this version of the type.
func (t *tracker) rejectedVersion(url, version string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	tt := t.types[url]
	return tt != nil && slices.Contains(tt.rejected, version)
}

func (t *tracker) status() ProxyStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	ps := ProxyStatus{
		Proxy: t.proxy, Node: t.node, Stream: t.kind, ConnectedSince: t.since,
		Identity: t.peer.identity, Address: t.peer.address, UserAgent: t.peer.userAgent,
		Outstanding: t.outstandingLocked(), Compared: t.compared, Types: make([]TypeStatus, 0, len(t.types)),
	}
	for _, tt := range t.types {
		st := tt.status
		if st.LastNACK != nil {
			n := *st.LastNACK
			st.LastNACK = &n
		}
		ps.Types = append(ps.Types, st)
	}
	sort.Slice(ps.Types, func(i, j int) bool { return ps.Types[i].TypeURL < ps.Types[j].TypeURL })
	return ps
}

func formatNonce(seq uint64) string {
	const digits = "0123456789"
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = digits[seq%10]
		seq /= 10
		if seq == 0 {
			break
		}
	}
	return string(b[i:])
}
