package sds

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/xds"
)

// Server serves publications with what they name but do not hold: the
// key material of their external secrets, and the load assignments the
// home builds from EndpointSlices. It pushes new material or endpoints to
// the nodes whose publication uses them. It implements
// revisions.Publisher; all methods are safe for concurrent use.
type Server struct {
	resolver  Resolver
	endpoints EndpointResolver
	set       func(node string, snap xds.Snapshot) error
	log       logr.Logger

	// refreshMu serializes refreshes, so that a slow one and the next do
	// not interleave their pushes.
	refreshMu sync.Mutex

	// nodesMu guards publishing, the lock of each node being published:
	// one Publish per node at a time, so that a slow read for an older
	// publication cannot land after a newer one, while other nodes go on.
	nodesMu    sync.Mutex
	publishing map[string]*nodeLock

	mu sync.Mutex
	// read is what was last read of each external thing referenced; kept
	// while a served publication or a warm render refers to it.
	read map[external]readResult
	// served is, per node ID, the publication served and the versions of
	// its secret and endpoint sets.
	served map[string]served
	// failing is, per node ID, the last refresh error logged, so that a
	// broken file is logged once, not on every poll.
	failing map[string]string
	// round counts refreshes; a read records the round it was made in.
	round uint64
}

// EndpointResolver builds the load assignment of generated endpoints
// (render.ExternalEndpoints): a render.Resource whose Body is an encoded
// ClusterLoadAssignment named ext.ClusterName. Its errors are faults of
// the reference; endpoints are never waited for (no endpoint is an empty
// assignment). It is called concurrently, for several nodes at once; it
// reads from memory (an informer's cache), so that a refresh of endpoints
// stays cheap.
type EndpointResolver interface {
	ResolveEndpoints(ext render.ExternalEndpoints) (render.Resource, error)
}

// external is one thing a publication names and the home supplies: a
// secret or, when endpoints is set, a load assignment.
type external struct {
	secret   render.ExternalSecret
	eps      render.ExternalEndpoints
	endpoint bool
}

// externals are the things pub names, secrets first.
func externals(pub revisions.Publication) []external {
	out := make([]external, 0, len(pub.ExternalSecrets)+len(pub.ExternalEndpoints))
	for _, x := range pub.ExternalSecrets {
		out = append(out, external{secret: x})
	}
	for _, x := range pub.ExternalEndpoints {
		out = append(out, external{eps: x, endpoint: true})
	}
	if pub.Candidate != nil {
		// A rollout serves both revisions: both need their material read.
		out = append(out, externals(*pub.Candidate)...)
	}
	return out
}

type readResult struct {
	res render.Resource
	err error
	// warm: read for a render not published yet; read again by the next
	// refresh even when no served publication refers to it.
	warm bool
	// round is the refresh round the read was made in.
	round uint64
}

type served struct {
	pub revisions.Publication
	// secrets and endpoints are the versions of the SDS and EDS sets.
	secrets, endpoints string
}

// NewServer returns a Server that reads secrets through resolver and
// serves snapshots through set (xds.Server.SetSnapshot).
func NewServer(resolver Resolver, set func(node string, snap xds.Snapshot) error, log logr.Logger) *Server {
	return &Server{
		resolver: resolver, set: set, log: log,
		read: map[external]readResult{}, served: map[string]served{}, failing: map[string]string{},
		publishing: map[string]*nodeLock{},
	}
}

// WithEndpoints makes the Server build generated endpoints through r (the
// Kubernetes home); without it, a publication that names any is refused.
// Call it before the Server is used.
func (s *Server) WithEndpoints(r EndpointResolver) *Server {
	s.endpoints = r
	return s
}

// resolve reads x.
func (s *Server) resolve(x external) (render.Resource, error) {
	if !x.endpoint {
		return s.resolver.Resolve(x.secret)
	}
	if s.endpoints == nil {
		return render.Resource{}, fmt.Errorf("endpoints of cluster %q (%s): this home does not build endpoints from EndpointSlices", x.eps.ClusterName, x.eps.Source)
	}
	return s.endpoints.ResolveEndpoints(x.eps)
}

// References reports whether a served or warm configuration refers to the
// secret ref (as resolved: NAMESPACE/NAME on Kubernetes), so that a home
// refreshes only for the secrets it serves.
func (s *Server) References(ref string) bool {
	return s.refers(func(x external) bool { return !x.endpoint && x.secret.Ref == ref })
}

// ReferencesEndpoints reports whether a served configuration builds
// endpoints from the EndpointSlices of namespace.
func (s *Server) ReferencesEndpoints(namespace string) bool {
	return s.refers(func(x external) bool { return x.endpoint && x.eps.Namespace == namespace })
}

func (s *Server) refers(match func(external) bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for x := range s.read {
		if match(x) {
			return true
		}
	}
	for _, sp := range s.served {
		if slices.ContainsFunc(externals(sp.pub), match) {
			return true
		}
	}
	return false
}

// Warm reads the secrets of a render before it is applied, so that the
// engine's Publish finds them read. Call it outside any lock.
func (s *Server) Warm(exts []render.ExternalSecret) {
	for _, ext := range exts {
		x := external{secret: ext}
		s.mu.Lock()
		_, known := s.read[x]
		s.mu.Unlock()
		if known {
			continue
		}
		res, err := s.resolve(x)
		s.mu.Lock()
		s.read[x] = readResult{res: res, err: err, warm: true, round: s.round}
		s.mu.Unlock()
	}
}

// Publish implements revisions.Publisher: it serves pub to node with its
// secrets and generated endpoints. It refuses the publication when a
// secret cannot be served, so that no proxy gets a configuration whose
// secrets are missing: as NotReady when material is missing (the engine
// waits and tries again), as a fault of the revision when a ref or kind is
// wrong. What was never read, or was missing when it was, is read now,
// outside the lock every node shares (a Secret read may wait for the API
// server for seconds); publications of one node are served in the order
// of their calls.
func (s *Server) Publish(node string, pub revisions.Publication) error {
	defer s.lockNode(node)()
	s.mu.Lock()
	round := s.round
	var unread []external
	for _, x := range externals(pub) {
		if r, known := s.read[x]; !known || errors.Is(r.err, revisions.ErrNotReady) {
			unread = append(unread, x)
		}
	}
	s.mu.Unlock()
	fresh := s.readEach(unread, round)

	s.mu.Lock()
	defer s.mu.Unlock()
	for x, f := range fresh {
		cur, known := s.read[x]
		if known && cur.round > round {
			continue // a refresh that began after this read read it again
		}
		f.warm = cur.warm
		s.read[x] = f
	}
	snap, err := s.snapshotLocked(pub)
	if err != nil {
		return err
	}
	if err := s.set(node, snap); err != nil {
		return err
	}
	s.served[node] = servedAs(pub, snap)
	delete(s.failing, node)
	return nil
}

// readEach reads each of xs once, as of round; call it without mu.
func (s *Server) readEach(xs []external, round uint64) map[external]readResult {
	fresh := make(map[external]readResult, len(xs))
	for _, x := range xs {
		if _, done := fresh[x]; !done {
			res, err := s.resolve(x)
			fresh[x] = readResult{res: res, err: err, round: round}
		}
	}
	return fresh
}

// nodeLock is the lock of one node's publications; users counts the
// Publish calls that hold or wait for it, so that it is dropped with the
// last.
type nodeLock struct {
	mu    sync.Mutex
	users int
}

// lockNode waits until no other Publish of node runs, and returns the
// unlock.
func (s *Server) lockNode(node string) (unlock func()) {
	s.nodesMu.Lock()
	l := s.publishing[node]
	if l == nil {
		l = &nodeLock{}
		s.publishing[node] = l
	}
	l.users++
	s.nodesMu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		s.nodesMu.Lock()
		if l.users--; l.users == 0 {
			delete(s.publishing, node)
		}
		s.nodesMu.Unlock()
	}
}

// waiting counts the Publish calls of node that run or wait (tests).
func (s *Server) waiting(node string) int {
	s.nodesMu.Lock()
	defer s.nodesMu.Unlock()
	if l := s.publishing[node]; l != nil {
		return l.users
	}
	return 0
}

func servedAs(pub revisions.Publication, snap xds.Snapshot) served {
	return served{pub: pub, secrets: snap.Types[resourcev3.SecretType].Version, endpoints: snap.Types[resourcev3.EndpointType].Version}
}

func sortedByName(rs []render.Resource) []render.Resource {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
	return rs
}

// joinSecretErrors is nil, a wait (NotReady) when every secret is only
// missing, or a fault of the configuration when one is wrong.
func joinSecretErrors(errs []error) error {
	switch {
	case len(errs) == 0:
		return nil
	case slices.ContainsFunc(errs, func(e error) bool { return !errors.Is(e, revisions.ErrNotReady) }):
		// A fault of the configuration (a bad ref or kind) refuses the
		// revision even if some files are only missing.
		return configFault(errs)
	default:
		return revisions.NotReady(errors.Join(errs...))
	}
}

// configFault is the error of secrets of which at least one is wrong in
// the configuration: its text names every problem, missing files too, but
// it unwraps only to the faults, so it is never taken for ErrNotReady.
type configFault []error

func (f configFault) Error() string { return errors.Join(f...).Error() }

func (f configFault) Unwrap() []error {
	var faults []error
	for _, e := range f {
		if !errors.Is(e, revisions.ErrNotReady) {
			faults = append(faults, e)
		}
	}
	return faults
}

// Refresh reads every secret and endpoint set a served publication uses
// again, outside the lock that Publish takes, and serves the publications
// whose secrets or endpoints changed under a new version of that type
// only. A secret that became unreadable keeps the last good one served,
// and is logged once.
func (s *Server) Refresh() { s.refresh(func(external) bool { return true }) }

// RefreshEndpoints is Refresh for the endpoints built from the
// EndpointSlices of namespace only: what a home calls when one of them
// changed, without reading any secret again.
func (s *Server) RefreshEndpoints(namespace string) {
	s.refresh(func(x external) bool { return x.endpoint && x.eps.Namespace == namespace })
}

// refresh reads again what match selects; the rest keeps what was read.
func (s *Server) refresh(match func(external) bool) {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	s.mu.Lock()
	s.round++
	round := s.round
	var xs []external
	for _, sp := range s.served {
		for _, x := range externals(sp.pub) {
			if match(x) {
				xs = append(xs, x)
			}
		}
	}
	for x, r := range s.read {
		if r.warm && match(x) {
			xs = append(xs, x)
		}
	}
	s.mu.Unlock()

	fresh := s.readEach(xs, round)

	s.mu.Lock()
	defer s.mu.Unlock()
	// What was read during this refresh (by Warm or Publish) is as new
	// and kept; what no served publication uses any more is forgotten.
	for x, r := range s.read {
		switch f, ok := fresh[x]; {
		case r.round >= round || !match(x):
			// read meanwhile, or not asked for
		case ok:
			f.round = round
			s.read[x] = f
		default:
			delete(s.read, x)
		}
	}
	s.pushLocked()
}

// pushLocked serves every publication whose secrets or endpoints, as read
// now, differ from those served. Called with mu held.
func (s *Server) pushLocked() {
	nodes := make([]string, 0, len(s.served))
	for n, sp := range s.served {
		if len(sp.pub.ExternalSecrets)+len(sp.pub.ExternalEndpoints) > 0 {
			nodes = append(nodes, n)
		}
	}
	sort.Strings(nodes)
	for _, node := range nodes {
		sp := s.served[node]
		snap, err := s.snapshotLocked(sp.pub)
		now := servedAs(sp.pub, snap)
		if err == nil && now.secrets == sp.secrets && now.endpoints == sp.endpoints {
			delete(s.failing, node)
			continue
		}
		if err == nil {
			err = s.set(node, snap)
		}
		if err != nil {
			if s.failing[node] != err.Error() {
				s.failing[node] = err.Error()
				s.log.Error(err, "secrets or endpoints changed but cannot be served; the proxies keep the previous ones", "node", node)
			}
			continue
		}
		delete(s.failing, node)
		s.served[node] = now
		switch {
		case now.secrets != sp.secrets:
			s.log.Info("secrets changed; serving them", "node", node, "version", now.secrets)
		default:
			s.log.V(1).Info("endpoints changed; serving them", "node", node, "version", now.endpoints)
		}
	}
}

// snapshotLocked is pub with its secrets and endpoints as last read,
// without reading.
func (s *Server) snapshotLocked(pub revisions.Publication) (xds.Snapshot, error) {
	snap, err := s.sideLocked(pub)
	if err != nil || pub.Candidate == nil {
		return snap, err
	}
	cand, err := s.sideLocked(*pub.Candidate)
	if err != nil {
		return xds.Snapshot{}, fmt.Errorf("candidate %s: %w", pub.Candidate.Version, err)
	}
	snap.Candidate, snap.CandidateShare = &cand, pub.CandidateShare
	return snap, nil
}

// sideLocked is one side of a rollout's split (or the whole publication
// without one).
func (s *Server) sideLocked(pub revisions.Publication) (xds.Snapshot, error) {
	var secrets, endpoints []render.Resource
	var errs []error
	pub.Candidate = nil
	for _, x := range externals(pub) {
		r, known := s.read[x]
		switch {
		case !known && x.endpoint:
			errs = append(errs, revisions.NotReady(fmt.Errorf("endpoints of cluster %q (%s) not read yet", x.eps.ClusterName, x.eps.Source)))
		case !known:
			errs = append(errs, revisions.NotReady(fmt.Errorf("secret %q (%s) not read yet", x.secret.Name, x.secret.Source)))
		case r.err != nil:
			errs = append(errs, r.err)
		case x.endpoint:
			endpoints = append(endpoints, r.res)
		default:
			secrets = append(secrets, r.res)
		}
	}
	if err := joinSecretErrors(errs); err != nil {
		return xds.Snapshot{}, err
	}
	return Snapshot(pub, sortedByName(secrets), sortedByName(endpoints))
}

// Snapshot turns a publication into the snapshot served: its secret set
// holds the rendered secrets (if any) and the external ones, its load
// assignments the rendered ones and the generated endpoints. The version
// of a set with external content is derived from the publication's own
// version of the type and that content, so changed material or endpoints
// give a new version of that type only, while unchanged ones are not sent
// again.
func Snapshot(pub revisions.Publication, secrets, endpoints []render.Resource) (xds.Snapshot, error) {
	snap := xds.Snapshot{Version: pub.Version, Owner: pub.Owner, Types: make(map[string]xds.TypeSnapshot, len(pub.Types)+2)}
	for url, t := range pub.Types {
		snap.Types[url] = xds.TypeSnapshot{Version: t.Version, Resources: t.Resources}
	}
	for _, ext := range []struct {
		url, kind, prefix string
		rs                []render.Resource
	}{
		{resourcev3.SecretType, "secret", "sds-", secrets},
		{resourcev3.EndpointType, "load assignment", "eds-", endpoints},
	} {
		if len(ext.rs) == 0 {
			continue
		}
		rendered := pub.Types[ext.url]
		rs := make([]render.Resource, 0, len(rendered.Resources)+len(ext.rs))
		rs = append(rs, rendered.Resources...)
		for _, e := range ext.rs {
			for _, r := range rendered.Resources {
				if r.Name == e.Name {
					return xds.Snapshot{}, fmt.Errorf("%s %q (%s) is both in the configuration (%s) and external", ext.kind, e.Name, e.Source, r.Source)
				}
			}
			rs = append(rs, e)
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
		sum := sha256.Sum256([]byte(rendered.Version + "\x00" + render.HashResources(ext.rs)))
		snap.Types[ext.url] = xds.TypeSnapshot{Version: ext.prefix + hex.EncodeToString(sum[:8]), Resources: rs}
	}
	return snap, nil
}

var _ revisions.Publisher = (*Server)(nil)
