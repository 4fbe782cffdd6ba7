package sds

import (
	"cmp"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
)

// Resolver reads the key material of external secrets. Resolve returns the
// SDS secret of ext (a render.Resource whose Body is an encoded
// tlsv3.Secret named ext.Name). An error made by revisions.NotReady says
// the material is missing for now (the revision waits for it); any other
// error is a fault of the reference (a bad ref, kind or key) and rejects
// the revision. Errors name the secret, its ref and where the
// configuration names it, never the material. Resolve is called
// concurrently.
type Resolver interface {
	Resolve(ext render.ExternalSecret) (render.Resource, error)
}

// File names inside a secret's directory, as the keys of a Kubernetes
// kubernetes.io/tls Secret.
const (
	TLSCertFile = "tls.crt"
	TLSKeyFile  = "tls.key"
	CACertFile  = "ca.crt"
)

// refSegment is one plain name of a secret reference or an opaque key: it
// cannot be ".", ".." or hold a path separator.
var refSegment = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)

// Files resolves secrets from files below Dir: ref "name" is the directory
// Dir/name, ref "namespace/name" is Dir/namespace/name, holding tls.crt and
// tls.key (kind tls), ca.crt or else tls.crt (kind validation), or a file
// named after the key (kind opaque). Dir is opened as an os.Root, so no
// file outside it is ever read, not even through a symbolic link.
type Files struct {
	Dir string
	Plaintext
}

// Plaintext says whether xDS runs without mutual TLS (Insecure): then
// secrets that hold key material (TLS keys, opaque values) are served only
// when Allowed names them ("*" names all), for any client that reaches the
// server could fetch them. Every Resolver of a home checks it.
type Plaintext struct {
	Insecure bool
	Allowed  []string
	// MutualTLS tells how this home serves xDS over mutual TLS, for the
	// refusal's message.
	MutualTLS string
}

// Refused says why secret ext may not be served, or returns nil. Its
// error is NotReady: the revision waits until the home is configured to
// serve it.
func (p Plaintext) Refused(ext render.ExternalSecret) error {
	if !p.Insecure || ext.Kind == "validation" || slices.Contains(p.Allowed, "*") || slices.Contains(p.Allowed, ext.Name) {
		return nil
	}
	return revisions.NotReady(fmt.Errorf("secret %q (ref %q, %s) holds key material and xDS runs without mutual TLS, so legate does not serve it: "+
		"%s, or allow it over plaintext with --xds-insecure-secrets %s", ext.Name, ext.Ref, ext.Source, cmp.Or(p.MutualTLS, "serve xDS over mutual TLS"), ext.Name))
}

// RefDir is the directory of ext relative to a Files Dir. Anything but NAME or
// NAMESPACE/NAME of plain names, such as an absolute path or "..", is
// refused.
func RefDir(ext render.ExternalSecret) (string, error) {
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

// Resolve implements Resolver.
func (f Files) Resolve(ext render.ExternalSecret) (render.Resource, error) {
	if f.Dir == "" {
		return render.Resource{}, revisions.NotReady(fmt.Errorf("the configuration refers to external secret %q (%s) but no secrets directory is configured: set secretsDir or --secrets-dir",
			ext.Name, ext.Source))
	}
	dir, err := RefDir(ext)
	if err != nil {
		return render.Resource{}, err
	}
	if err := f.Refused(ext); err != nil {
		return render.Resource{}, err
	}
	root, err := os.OpenRoot(f.Dir)
	if err != nil {
		return render.Resource{}, revisions.NotReady(fmt.Errorf("open secrets directory: %w", err))
	}
	defer func() { _ = root.Close() }()
	return Build(ext, fileEntries{root: root, base: f.Dir, dir: dir})
}

// fileEntries are the files of one secret's directory.
type fileEntries struct {
	root      *os.Root
	base, dir string
}

func (e fileEntries) Read(key string) ([]byte, error) {
	rel := path.Join(e.dir, key)
	data, err := e.root.ReadFile(rel)
	if err != nil {
		// The os error names the file and the cause, never content.
		return nil, fmt.Errorf("read %s: %w", filepath.Join(e.base, filepath.FromSlash(rel)), err)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%s is empty", filepath.Join(e.base, filepath.FromSlash(rel)))
	}
	return data, nil
}

func (e fileEntries) Has(key string) bool {
	_, err := e.root.Stat(path.Join(e.dir, key))
	return err == nil
}

// Entries are the entries of one secret: the files of its directory, the
// keys of a Kubernetes Secret. Errors name the entry, never its content.
type Entries interface {
	// Read returns a non-empty entry, or an error.
	Read(key string) ([]byte, error)
	// Has reports whether the entry exists.
	Has(key string) bool
}

// Build makes the SDS secret of ext from its entries: tls.crt and tls.key
// (kind tls), ca.crt or else tls.crt (kind validation), the key's entry
// (kind opaque). An entry that cannot be read makes a NotReady error (it
// may appear later); a wrong kind or key is a fault of the configuration.
func Build(ext render.ExternalSecret, e Entries) (render.Resource, error) {
	read := func(key string) ([]byte, error) {
		data, err := e.Read(key)
		if err != nil {
			return nil, revisions.NotReady(fmt.Errorf("secret %q (ref %q, %s): %w", ext.Name, ext.Ref, ext.Source, err))
		}
		return data, nil
	}
	sec := &tlsv3.Secret{Name: ext.Name}
	switch ext.Kind {
	case "tls":
		crt, err := read(TLSCertFile)
		if err != nil {
			return render.Resource{}, err
		}
		key, err := read(TLSKeyFile)
		if err != nil {
			return render.Resource{}, err
		}
		sec.Type = &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{CertificateChain: inline(crt), PrivateKey: inline(key)}}
	case "validation":
		key := CACertFile
		if !e.Has(CACertFile) && e.Has(TLSCertFile) {
			key = TLSCertFile
		}
		ca, err := read(key)
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
	return Encode(sec, ext.Source)
}

// Encode is the SDS resource of sec, as a Resolver returns it.
func Encode(sec *tlsv3.Secret, source render.Position) (render.Resource, error) {
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(sec)
	if err != nil {
		return render.Resource{}, fmt.Errorf("secret %q: encode: %w", sec.GetName(), err)
	}
	return render.Resource{Name: sec.GetName(), Body: body, Source: source}, nil
}

func inline(b []byte) *corev3.DataSource {
	return &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: b}}
}
