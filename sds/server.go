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

// Server serves publications with their external secrets and pushes new
// key material to the nodes whose publication uses it. It implements
// revisions.Publisher; all methods are safe for concurrent use.
type Server struct {
	resolver Resolver
	set      func(node string, snap xds.Snapshot) error
	log      logr.Logger

	// refreshMu serializes refreshes, so that a slow one and the next do
	// not interleave their pushes.
	refreshMu sync.Mutex

	mu sync.Mutex
	// read is what was last read of each secret referenced; kept while a
	// served publication or a warm render refers to it.
	read map[render.ExternalSecret]readResult
	// served is, per node ID, the publication served and the version of
	// its secret set.
	served map[string]served
	// failing is, per node ID, the last refresh error logged, so that a
	// broken file is logged once, not on every poll.
	failing map[string]string
	// round counts refreshes; a read records the round it was made in.
	round uint64
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
	pub     revisions.Publication
	version string
}

// NewServer returns a Server that reads secrets through resolver and
// serves snapshots through set (xds.Server.SetSnapshot).
func NewServer(resolver Resolver, set func(node string, snap xds.Snapshot) error, log logr.Logger) *Server {
	return &Server{
		resolver: resolver, set: set, log: log,
		read: map[render.ExternalSecret]readResult{}, served: map[string]served{}, failing: map[string]string{},
	}
}

// References reports whether a served or warm configuration refers to the
// secret ref (as resolved: NAMESPACE/NAME on Kubernetes), so that a home
// refreshes only for the secrets it serves.
func (s *Server) References(ref string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ext := range s.read {
		if ext.Ref == ref {
			return true
		}
	}
	for _, sp := range s.served {
		for _, ext := range sp.pub.ExternalSecrets {
			if ext.Ref == ref {
				return true
			}
		}
	}
	return false
}

// Warm reads the secrets of a render before it is applied, so that the
// engine's Publish finds them read. Call it outside any lock.
func (s *Server) Warm(exts []render.ExternalSecret) {
	for _, ext := range exts {
		s.mu.Lock()
		_, known := s.read[ext]
		s.mu.Unlock()
		if known {
			continue
		}
		res, err := s.resolver.Resolve(ext)
		s.mu.Lock()
		s.read[ext] = readResult{res: res, err: err, warm: true, round: s.round}
		s.mu.Unlock()
	}
}

// Publish implements revisions.Publisher: it serves pub to node with its
// secrets. It refuses the publication when a secret cannot be served, so
// that no proxy gets a configuration whose secrets are missing: as
// NotReady when material is missing (the engine waits and tries again), as
// a fault of the revision when a ref or kind is wrong.
func (s *Server) Publish(node string, pub revisions.Publication) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	external, err := s.secretsLocked(pub.ExternalSecrets)
	if err != nil {
		return err
	}
	snap, err := Snapshot(pub, external)
	if err != nil {
		return err
	}
	if err := s.set(node, snap); err != nil {
		return err
	}
	s.served[node] = served{pub: pub, version: snap.Types[resourcev3.SecretType].Version}
	delete(s.failing, node)
	return nil
}

// secretsLocked returns the secrets of exts, sorted by name, from what
// was read; a secret never read, or missing when it was, is read now.
// Called with mu held.
func (s *Server) secretsLocked(exts []render.ExternalSecret) ([]render.Resource, error) {
	if len(exts) == 0 {
		return nil, nil
	}
	out := make([]render.Resource, 0, len(exts))
	var errs []error
	for _, ext := range exts {
		r, known := s.read[ext]
		if !known || errors.Is(r.err, revisions.ErrNotReady) {
			r.res, r.err = s.resolver.Resolve(ext)
			r.round = s.round
			s.read[ext] = r
		}
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		out = append(out, r.res)
	}
	if err := joinSecretErrors(errs); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
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

// Refresh reads every secret a served publication uses again, outside the
// lock that Publish takes, and serves the publications whose secrets
// changed under a new secret version. A secret that became unreadable
// keeps the last good one served, and is logged once.
func (s *Server) Refresh() {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	s.mu.Lock()
	s.round++
	round := s.round
	var exts []render.ExternalSecret
	for _, sp := range s.served {
		exts = append(exts, sp.pub.ExternalSecrets...)
	}
	for ext, r := range s.read {
		if r.warm {
			exts = append(exts, ext)
		}
	}
	s.mu.Unlock()

	fresh := make(map[render.ExternalSecret]readResult, len(exts))
	for _, ext := range exts {
		if _, done := fresh[ext]; !done {
			res, err := s.resolver.Resolve(ext)
			fresh[ext] = readResult{res: res, err: err}
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	// What was read during this refresh (by Warm or Publish) is as new
	// and kept; what no served publication uses any more is forgotten.
	for ext, r := range s.read {
		switch f, ok := fresh[ext]; {
		case r.round >= round:
			// read meanwhile
		case ok:
			f.round = round
			s.read[ext] = f
		default:
			delete(s.read, ext)
		}
	}
	s.pushLocked()
}

// pushLocked serves every publication whose secrets, as read now, differ
// from those served. Called with mu held.
func (s *Server) pushLocked() {
	nodes := make([]string, 0, len(s.served))
	for n, sp := range s.served {
		if len(sp.pub.ExternalSecrets) > 0 {
			nodes = append(nodes, n)
		}
	}
	sort.Strings(nodes)
	for _, node := range nodes {
		sp := s.served[node]
		snap, err := s.snapshotLocked(sp.pub)
		if err == nil && snap.Types[resourcev3.SecretType].Version == sp.version {
			delete(s.failing, node)
			continue
		}
		if err == nil {
			err = s.set(node, snap)
		}
		if err != nil {
			if s.failing[node] != err.Error() {
				s.failing[node] = err.Error()
				s.log.Error(err, "secrets changed but cannot be served; the proxies keep the previous ones", "node", node)
			}
			continue
		}
		delete(s.failing, node)
		v := snap.Types[resourcev3.SecretType].Version
		s.served[node] = served{pub: sp.pub, version: v}
		s.log.Info("secrets changed; serving them", "node", node, "version", v)
	}
}

// snapshotLocked is pub with its secrets as last read, without reading.
func (s *Server) snapshotLocked(pub revisions.Publication) (xds.Snapshot, error) {
	out := make([]render.Resource, 0, len(pub.ExternalSecrets))
	var errs []error
	for _, ext := range pub.ExternalSecrets {
		r, known := s.read[ext]
		switch {
		case !known:
			errs = append(errs, revisions.NotReady(fmt.Errorf("secret %q (%s) not read yet", ext.Name, ext.Source)))
		case r.err != nil:
			errs = append(errs, r.err)
		default:
			out = append(out, r.res)
		}
	}
	if err := joinSecretErrors(errs); err != nil {
		return xds.Snapshot{}, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return Snapshot(pub, out)
}

// Snapshot turns a publication into the snapshot served, its secret set
// holding the rendered secrets (if any) and the external ones. The secret
// set's version is derived from the publication's own secret version and
// the content of the external secrets, so changed material gives a new
// version while unchanged material is not sent again.
func Snapshot(pub revisions.Publication, external []render.Resource) (xds.Snapshot, error) {
	snap := xds.Snapshot{Version: pub.Version, Types: make(map[string]xds.TypeSnapshot, len(pub.Types)+1)}
	for url, t := range pub.Types {
		snap.Types[url] = xds.TypeSnapshot{Version: t.Version, Resources: t.Resources}
	}
	if len(external) == 0 {
		return snap, nil
	}
	rendered := pub.Types[resourcev3.SecretType]
	rs := make([]render.Resource, 0, len(rendered.Resources)+len(external))
	rs = append(rs, rendered.Resources...)
	for _, e := range external {
		for _, r := range rendered.Resources {
			if r.Name == e.Name {
				return xds.Snapshot{}, fmt.Errorf("secret %q (%s) is both in the configuration (%s) and external", e.Name, e.Source, r.Source)
			}
		}
		rs = append(rs, e)
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
	sum := sha256.Sum256([]byte(rendered.Version + "\x00" + render.HashResources(external)))
	snap.Types[resourcev3.SecretType] = xds.TypeSnapshot{Version: "sds-" + hex.EncodeToString(sum[:8]), Resources: rs}
	return snap, nil
}

var _ revisions.Publisher = (*Server)(nil)
