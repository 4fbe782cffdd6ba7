package standalone

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/xds"
)

// DefaultSecretsInterval is how often the secrets directory is checked for
// changed files.
const DefaultSecretsInterval = 5 * time.Second

// File names inside a secret's directory, as the keys of a Kubernetes
// kubernetes.io/tls Secret.
const (
	tlsCertFile = "tls.crt"
	tlsKeyFile  = "tls.key"
	caCertFile  = "ca.crt"
)

// refSegment is one plain name of a secret reference or an opaque key: it
// cannot be ".", ".." or hold a path separator.
var refSegment = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)

// secretDir is the directory of ext relative to the secrets directory: ref
// "name" is "name", ref "namespace/name" (an EnvoyConfig with a
// metadata.namespace) is "namespace/name". Anything else, such as an
// absolute path or "..", is refused.
func secretDir(ext render.ExternalSecret) (string, error) {
	segs := strings.Split(ext.Ref, "/")
	ok := len(segs) <= 2
	for _, s := range segs {
		ok = ok && refSegment.MatchString(s)
	}
	if !ok {
		return "", fmt.Errorf("secret %q (%s): ref %q must be NAME or NAMESPACE/NAME of plain names (no \"..\", no absolute path)",
			ext.Name, ext.Source, ext.Ref)
	}
	return path.Join(segs...), nil
}

// secretReader reads secrets' files below one directory. The directory is
// opened as an os.Root, so no file outside it is ever read, not even
// through a symbolic link.
type secretReader struct {
	dir string
	// plaintext is set when xDS runs without mutual TLS: then secrets that
	// hold key material (TLS keys, opaque values) are served only when
	// plaintextOK names them ("*" names all).
	plaintext   bool
	plaintextOK []string
}

// keyMaterialRefused says why secret ext may not be served, or returns nil.
func (r secretReader) keyMaterialRefused(ext render.ExternalSecret) error {
	if !r.plaintext || ext.Kind == "validation" || slices.Contains(r.plaintextOK, "*") || slices.Contains(r.plaintextOK, ext.Name) {
		return nil
	}
	return revisions.NotReady(fmt.Errorf("secret %q (ref %q, %s) holds key material and xDS runs without mutual TLS, so legate does not serve it: "+
		"set --xds-client-ca (legate pki init), or allow it over plaintext with --xds-insecure-secrets %s", ext.Name, ext.Ref, ext.Source, ext.Name))
}

// build reads the files of every external secret and returns the SDS
// secrets, sorted by name. Errors name the secret, its ref, its source and
// the file; they never hold file content.
func (r secretReader) build(exts []render.ExternalSecret) ([]render.Resource, error) {
	if len(exts) == 0 {
		return nil, nil
	}
	if r.dir == "" {
		names := make([]string, len(exts))
		for i, e := range exts {
			names[i] = fmt.Sprintf("%q (%s)", e.Name, e.Source)
		}
		return nil, revisions.NotReady(fmt.Errorf("the configuration refers to external secrets %s but no secrets directory is configured: set secretsDir or --secrets-dir",
			strings.Join(names, ", ")))
	}
	root, err := os.OpenRoot(r.dir)
	if err != nil {
		return nil, revisions.NotReady(fmt.Errorf("open secrets directory: %w", err))
	}
	defer func() { _ = root.Close() }()
	var errs []error
	out := make([]render.Resource, 0, len(exts))
	for _, ext := range exts {
		res, err := r.one(root, ext)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, res)
	}
	if len(errs) > 0 {
		if slices.ContainsFunc(errs, func(e error) bool { return !errors.Is(e, revisions.ErrNotReady) }) {
			// A fault of the configuration (a bad ref or kind) refuses
			// the revision even if some files are only missing.
			return nil, configFault(errs)
		}
		return nil, revisions.NotReady(errors.Join(errs...))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
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

func (r secretReader) one(root *os.Root, ext render.ExternalSecret) (render.Resource, error) {
	dir, err := secretDir(ext)
	if err != nil {
		return render.Resource{}, err
	}
	if err := r.keyMaterialRefused(ext); err != nil {
		return render.Resource{}, err
	}
	read := func(file string) ([]byte, error) {
		rel := path.Join(dir, file)
		data, err := root.ReadFile(rel)
		if err != nil {
			// The os error names the file and the cause, never content.
			// A missing or unreadable file may appear later: wait for it.
			return nil, revisions.NotReady(fmt.Errorf("secret %q (ref %q, %s): read %s: %w", ext.Name, ext.Ref, ext.Source, filepath.Join(r.dir, filepath.FromSlash(rel)), err))
		}
		if len(data) == 0 {
			return nil, revisions.NotReady(fmt.Errorf("secret %q (ref %q, %s): %s is empty", ext.Name, ext.Ref, ext.Source, filepath.Join(r.dir, filepath.FromSlash(rel))))
		}
		return data, nil
	}
	inline := func(b []byte) *corev3.DataSource {
		return &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: b}}
	}
	sec := &tlsv3.Secret{Name: ext.Name}
	switch ext.Kind {
	case "tls":
		crt, err := read(tlsCertFile)
		if err != nil {
			return render.Resource{}, err
		}
		key, err := read(tlsKeyFile)
		if err != nil {
			return render.Resource{}, err
		}
		sec.Type = &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{CertificateChain: inline(crt), PrivateKey: inline(key)}}
	case "validation":
		ca, err := read(caCertFile)
		if errors.Is(err, os.ErrNotExist) {
			if _, serr := root.Stat(path.Join(dir, tlsCertFile)); serr == nil {
				ca, err = read(tlsCertFile)
			}
		}
		if err != nil {
			return render.Resource{}, err
		}
		sec.Type = &tlsv3.Secret_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{TrustedCa: inline(ca)}}
	case "opaque":
		if !refSegment.MatchString(ext.Key) {
			return render.Resource{}, fmt.Errorf("secret %q (ref %q, %s): key %q must be a plain file name", ext.Name, ext.Ref, ext.Source, ext.Key)
		}
		v, err := read(ext.Key)
		if err != nil {
			return render.Resource{}, err
		}
		sec.Type = &tlsv3.Secret_GenericSecret{GenericSecret: &tlsv3.GenericSecret{Secret: inline(v)}}
	default:
		return render.Resource{}, fmt.Errorf("secret %q (%s): kind %q is not tls, validation or opaque", ext.Name, ext.Source, ext.Kind)
	}
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(sec)
	if err != nil {
		return render.Resource{}, fmt.Errorf("secret %q: encode: %w", ext.Name, err)
	}
	return render.Resource{Name: ext.Name, Body: body, Source: ext.Source}, nil
}

// withSecrets turns a publication into the snapshot served, its secret set
// holding the rendered secrets (if any) and the external ones built from
// files. The secret set's version is derived from the publication's own
// secret version and the content of the external secrets, so a changed
// file gives a new version while unchanged ones are not sent again.
func withSecrets(pub revisions.Publication, external []render.Resource) (xds.Snapshot, error) {
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

// secretHome serves publications with their external secrets and pushes
// changed secret files to the nodes whose publication uses them. publish
// and refresh are safe for concurrent use; they are serialized so a refresh
// never replaces a newer publication.
type secretHome struct {
	reader secretReader
	set    func(node string, snap xds.Snapshot) error
	log    logr.Logger

	mu sync.Mutex
	// served is, per node ID, the publication served and the version of
	// its secret set.
	served map[string]servedPublication
	// failing is, per node ID, the last refresh error logged, so that a
	// broken file is logged once, not on every poll.
	failing map[string]string
}

type servedPublication struct {
	pub     revisions.Publication
	version string
}

func newSecretHome(reader secretReader, set func(string, xds.Snapshot) error, log logr.Logger) *secretHome {
	return &secretHome{reader: reader, set: set, log: log, served: map[string]servedPublication{}, failing: map[string]string{}}
}

// publish reads the publication's secrets and serves it. It refuses the
// publication when a secret cannot be read, so that no proxy is served a
// configuration whose secrets are missing: as NotReady when files are
// missing or empty (the engine waits and tries again), as a fault of the
// revision when a ref or kind is wrong.
func (h *secretHome) publish(node string, pub revisions.Publication) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	external, err := h.reader.build(pub.ExternalSecrets)
	if err != nil {
		return err
	}
	snap, err := withSecrets(pub, external)
	if err != nil {
		return err
	}
	if err := h.set(node, snap); err != nil {
		return err
	}
	h.served[node] = servedPublication{pub: pub, version: snap.Types[resourcev3.SecretType].Version}
	delete(h.failing, node)
	return nil
}

// refresh reads the secrets of every served publication again and serves
// those whose secret content changed under a new secret version. A secret
// that became unreadable keeps the last good one served and is logged.
func (h *secretHome) refresh() {
	h.mu.Lock()
	defer h.mu.Unlock()
	nodes := make([]string, 0, len(h.served))
	for n, sp := range h.served {
		if len(sp.pub.ExternalSecrets) > 0 {
			nodes = append(nodes, n)
		}
	}
	sort.Strings(nodes)
	for _, node := range nodes {
		sp := h.served[node]
		snap, err := h.snapshot(sp.pub)
		if err == nil && snap.Types[resourcev3.SecretType].Version == sp.version {
			delete(h.failing, node)
			continue
		}
		if err == nil {
			err = h.set(node, snap)
		}
		if err != nil {
			if h.failing[node] != err.Error() {
				h.failing[node] = err.Error()
				h.log.Error(err, "secrets changed but cannot be served; the proxies keep the previous ones", "node", node)
			}
			continue
		}
		delete(h.failing, node)
		v := snap.Types[resourcev3.SecretType].Version
		h.served[node] = servedPublication{pub: sp.pub, version: v}
		h.log.Info("secrets changed; serving them", "node", node, "version", v)
	}
}

func (h *secretHome) snapshot(pub revisions.Publication) (xds.Snapshot, error) {
	external, err := h.reader.build(pub.ExternalSecrets)
	if err != nil {
		return xds.Snapshot{}, err
	}
	return withSecrets(pub, external)
}

// run refreshes on every tick until ctx ends.
func (h *secretHome) run(ctx context.Context, tick <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			h.refresh()
		}
	}
}
