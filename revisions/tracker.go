package revisions

import (
	"slices"
	"strings"
	"time"

	"github.com/legate-dev/legate/rollout"
)

// tracker keeps, for one node ID, which proxies are connected and how each
// answered the current publication. It is plain data (no clock, no I/O);
// the Engine feeds it events in the order the xDS server reported them.
// Its size is bounded by the proxies connected now plus those that rejected
// the current publication.
type tracker struct {
	// version is the Publication.Version being judged; "" when nothing is
	// published.
	version string
	// since is when that publication was made, for the answer timeout.
	since   time.Time
	proxies map[string]*proxyAnswer
	// candidate is the Publication.Version of a rollout's candidate; ""
	// without a rollout. Answers to it are kept apart (proxyAnswer.cand*).
	candidate string
	// gone counts proxies kept only for their rejection (no stream open);
	// it is capped at maxGone so that a crash-looping proxy with a new
	// identity per stream cannot grow the map without bound.
	gone int
}

const maxGone = 256

// proxyKey is what a proxy is counted under: its name, within its tenant.
// Names are not unique across tenants (a pod name is the client's own
// word, qualified by its certificate's principal, the node ID), so a
// tenant's proxy on a node it shares with the platform can never answer
// for a proxy of the platform's by taking its name.
func proxyKey(ev ProxyEvent) string {
	if ev.Tenant == "" {
		return ev.Proxy
	}
	return ev.Tenant + "\x00" + ev.Proxy
}

// proxyAnswer is one proxy's standing towards the current publication.
type proxyAnswer struct {
	// name is the proxy's name as the xDS server reports it (ProxyEvent.Proxy).
	name string
	// conns counts the open streams with this identity (a pod may
	// reconnect before its old stream is reported closed).
	conns       int
	outstanding int
	acked       bool
	rejected    bool
	err         string
	// bucket is the proxy's rollout bucket; candAcked, candRejected and
	// candErr its answers to the rollout's candidate.
	bucket int
	// tenant is the tenant the proxy's credentials name (ProxyEvent.Tenant).
	tenant       string
	candAcked    bool
	candRejected bool
	candErr      string
}

// guestOf reports whether the proxy is a guest of a node whose owner is of
// ownerTenant: its credentials name another tenant. A proxy or an owner
// with no tenant is never one.
func (p *proxyAnswer) guestOf(ownerTenant string) bool {
	return p.tenant != "" && ownerTenant != "" && p.tenant != ownerTenant
}

func newTracker() *tracker {
	return &tracker{proxies: map[string]*proxyAnswer{}}
}

// reset starts judging a new publication: answers to the previous one are
// forgotten, and proxies kept only for their rejection are dropped.
func (t *tracker) reset(version string, since time.Time) {
	t.version = version
	t.since = since
	for id, p := range t.proxies {
		if p.conns == 0 {
			delete(t.proxies, id)
			continue
		}
		p.acked, p.rejected, p.err = false, false, ""
	}
	t.gone = 0
}

// observe records one event. It reports whether the event may change the
// verdict.
func (t *tracker) observe(ev ProxyEvent) bool {
	key := proxyKey(ev)
	p := t.proxies[key]
	switch ev.Kind {
	case ProxyConnected:
		if p == nil {
			p = &proxyAnswer{name: ev.Proxy}
			t.proxies[key] = p
		} else if p.conns == 0 {
			t.gone--
		}
		p.conns++
		p.bucket = ev.Bucket
		p.tenant = ev.Tenant
		return true
	case ProxyDisconnected:
		if p == nil {
			return false
		}
		p.conns--
		if p.conns > 0 {
			return false
		}
		p.conns = 0
		p.outstanding = 0
		if !p.rejected || t.gone >= maxGone {
			delete(t.proxies, key)
		} else {
			t.gone++
		}
		return true
	case ProxyACK:
		if p == nil {
			// An answer from a stream we never saw open: nothing to count.
			return false
		}
		p.outstanding = ev.Outstanding
		if ev.SnapshotVersion == t.version && t.version != "" {
			p.acked = true
		}
		if ev.SnapshotVersion == t.candidate && t.candidate != "" {
			p.candAcked = true
		}
		return true
	case ProxyNACK:
		if ev.SnapshotVersion == t.candidate && t.candidate != "" {
			return t.candidateNACK(ev)
		}
		if ev.SnapshotVersion != t.version || t.version == "" {
			if p != nil {
				p.outstanding = ev.Outstanding
			}
			return p != nil
		}
		if p == nil {
			// A rejection counts even if its stream is already gone.
			if t.gone >= maxGone {
				return false
			}
			p = &proxyAnswer{name: ev.Proxy, tenant: ev.Tenant}
			t.proxies[key] = p
			t.gone++
		}
		p.outstanding = ev.Outstanding
		if !p.rejected {
			p.rejected = true
			p.err = ev.Error
		}
		return true
	}
	return false
}

// tally counts the answers to the current publication, the owner's own
// proxies apart from its guests (ownerTenant: the tenant of the node's
// owner, see Options.TenantOf).
func (t *tracker) tally(ownerTenant string) standing {
	var s standing
	for _, p := range t.proxies {
		c := &s.own
		if p.guestOf(ownerTenant) {
			c = &s.guests
		}
		switch {
		case p.rejected:
			c.Population++
			c.Rejected++
		case p.conns > 0:
			c.Population++
			if p.acked && p.outstanding == 0 {
				c.Accepted++
			}
		}
	}
	return s
}

// rejections lists who rejected the current publication, sorted by proxy,
// guests marked.
func (t *tracker) rejections(ownerTenant string) []ProxyRejection {
	var out []ProxyRejection
	for _, p := range t.proxies {
		if p.rejected {
			out = append(out, ProxyRejection{Proxy: p.name, Error: p.err, Guest: p.guestOf(ownerTenant)})
		}
	}
	slices.SortFunc(out, func(a, b ProxyRejection) int { return strings.Compare(a.Proxy, b.Proxy) })
	return out
}

// connected reports whether any proxy of the node has a stream open.
func (t *tracker) connected() int {
	n := 0
	for _, p := range t.proxies {
		if p.conns > 0 {
			n++
		}
	}
	return n
}

// candidateNACK records a rejection of the rollout's candidate.
func (t *tracker) candidateNACK(ev ProxyEvent) bool {
	key := proxyKey(ev)
	p := t.proxies[key]
	if p == nil {
		if t.gone >= maxGone {
			return false
		}
		p = &proxyAnswer{name: ev.Proxy, bucket: -1, tenant: ev.Tenant}
		t.proxies[key] = p
		t.gone++
	}
	p.outstanding = ev.Outstanding
	if !p.candRejected {
		p.candRejected, p.candErr = true, ev.Error
	}
	return true
}

// startCandidate starts judging a rollout's candidate served under
// version: earlier answers to a candidate are forgotten.
func (t *tracker) startCandidate(version string) {
	t.candidate = version
	for _, p := range t.proxies {
		p.candAcked, p.candRejected, p.candErr = false, false, ""
	}
}

// promote makes the candidate the publication judged, keeping the answers
// the proxies gave it: a canary that ACKed it is not sent it again, so it
// would not answer again.
func (t *tracker) promote(since time.Time) {
	t.version, t.since = t.candidate, since
	t.candidate = ""
	for id, p := range t.proxies {
		if p.conns == 0 && !p.candRejected {
			delete(t.proxies, id)
			continue
		}
		p.acked, p.rejected, p.err = p.candAcked, p.candRejected, p.candErr
		p.candAcked, p.candRejected, p.candErr = false, false, ""
	}
}

// canaries counts the connected proxies a share serves the candidate, and
// how many ACKed it with nothing outstanding; it names one that has not
// (the first by name) and the first rejection of the candidate. As for
// the verdict, the owner's guests count only while none of its own
// proxies is here (ownerTenant: see tally).
func (t *tracker) canaries(share int, ownerTenant string) (inStep, acked int, waiting string, rej *rollout.Rejection) {
	guests := true
	for _, p := range t.proxies {
		if (p.conns > 0 || p.candRejected) && !p.guestOf(ownerTenant) {
			guests = false
			break
		}
	}
	for _, p := range t.proxies {
		if p.guestOf(ownerTenant) != guests {
			continue
		}
		if p.candRejected && (rej == nil || p.name < rej.Proxy) {
			rej = &rollout.Rejection{Proxy: p.name, Error: p.candErr}
		}
		if p.conns == 0 || p.bucket < 0 || !rollout.InShare(p.bucket, share) {
			continue
		}
		inStep++
		if p.candAcked && p.outstanding == 0 {
			acked++
		} else if waiting == "" || p.name < waiting {
			waiting = p.name
		}
	}
	return inStep, acked, waiting, rej
}
