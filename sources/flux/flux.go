// Package flux reads the artifact a Flux source object (a GitRepository or
// an OCIRepository of source.toolkit.fluxcd.io/v1) has produced: it reads
// the object's status.artifact, downloads the tarball from its url,
// verifies it against its digest and yields the files under the configured
// path exactly as a Git or OCI source would. Flux's source-controller does
// the cloning and pulling; legate only trusts what the digest proves.
//
// The package must not import a home, render or publish.
package flux

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/sources/oci"
)

// The Flux source kinds legate reads.
const (
	KindGitRepository = "GitRepository"
	KindOCIRepository = "OCIRepository"
)

// GroupVersion is the Flux source API version read.
var GroupVersion = schema.GroupVersion{Group: "source.toolkit.fluxcd.io", Version: "v1"}

// ErrDigestMismatch is returned (wrapped) when a downloaded artifact is not
// the one the object's status names.
var ErrDigestMismatch = errors.New("artifact digest mismatch")

// Defaults applied by New for zero Config fields.
const (
	DefaultTimeout          = 60 * time.Second
	DefaultMaxArtifactSize  = 64 << 20
	DefaultMaxExtractedSize = 256 << 20
	DefaultMaxFiles         = 10000
)

// Config configures one Flux artifact source.
type Config struct {
	// Name identifies the source (Origin.Source).
	Name string
	// Reader reads the Flux object (a controller's cache or a client).
	Reader client.Reader
	// Kind is GitRepository or OCIRepository; Key names the object.
	Kind string
	Key  client.ObjectKey
	// Path is the directory inside the artifact ("envoy", "./envoy"); ""
	// is the root.
	Path string
	// HTTP downloads artifacts (default: a client with Timeout).
	HTTP *http.Client
	// Timeout bounds one download.
	Timeout time.Duration
	// Limits bound the download and what it unpacks to.
	Limits oci.Limits
	// Budget bounds the files kept in memory (those the renderer reads),
	// alone and with the other sources sharing it (default: a budget of
	// its own with sources.DefaultSourceBytes).
	Budget *sources.Budget
}

// Source fetches one Flux object's artifact. It is not safe for concurrent
// fetches (sources.Source).
type Source struct {
	cfg  Config
	path string
	last *sources.Result
	// verified is the artifact last downloaded and verified.
	verified artifact
}

// New validates cfg; it touches neither the API server nor the network.
func New(cfg Config) (*Source, error) {
	if cfg.Kind != KindGitRepository && cfg.Kind != KindOCIRepository {
		return nil, fmt.Errorf("source %q: kind %q is not %s or %s", cfg.Name, cfg.Kind, KindGitRepository, KindOCIRepository)
	}
	if cfg.Reader == nil || cfg.Key.Name == "" {
		return nil, fmt.Errorf("source %q: the %s needs a name and a reader", cfg.Name, cfg.Kind)
	}
	p, err := sources.CleanPath(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("source %q: %w", cfg.Name, err)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: cfg.Timeout}
	}
	if cfg.Limits.Compressed <= 0 {
		cfg.Limits.Compressed = DefaultMaxArtifactSize
	}
	if cfg.Limits.Extracted <= 0 {
		cfg.Limits.Extracted = DefaultMaxExtractedSize
	}
	if cfg.Limits.Files <= 0 {
		cfg.Limits.Files = DefaultMaxFiles
	}
	if cfg.Budget == nil {
		cfg.Budget = sources.NewBudget(0, 0)
	}
	return &Source{cfg: cfg, path: p}, nil
}

// Name is the configured name.
func (s *Source) Name() string { return s.cfg.Name }

// Object is "<Kind> <namespace>/<name>", how messages name the object.
func (s *Source) Object() string { return s.cfg.Kind + " " + s.cfg.Key.String() }

// artifact is what Flux's status.artifact says.
type artifact struct {
	url, digest, revision string
	metadata              map[string]string
}

// same reports whether a names the very artifact b did.
func (a artifact) same(b artifact) bool {
	return a.url == b.url && a.digest == b.digest && a.revision == b.revision
}

// Fetch reads the object's artifact; an artifact already verified is not
// downloaded again.
func (s *Source) Fetch(ctx context.Context) (*sources.Result, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(GroupVersion.WithKind(s.cfg.Kind))
	if err := s.cfg.Reader.Get(ctx, s.cfg.Key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%s does not exist", s.Object())
		}
		return nil, fmt.Errorf("read %s: %w", s.Object(), err)
	}
	art, err := s.artifactOf(obj)
	if err != nil {
		return nil, err
	}
	if s.last != nil && art.same(s.verified) {
		prev := *s.last
		prev.Changed = false
		return &prev, nil
	}
	charge := s.cfg.Budget.Fetch(s.cfg.Name)
	defer charge.Drop()
	files, err := s.download(ctx, art, charge)
	if err != nil {
		return nil, err
	}
	if s.path != "." && len(files) == 0 {
		return nil, fmt.Errorf("the artifact of %s (revision %s) has no files under path %q", s.Object(), art.revision, s.path)
	}
	tree, err := sources.NewTree(files)
	if err != nil {
		return nil, fmt.Errorf("the artifact of %s: %w", s.Object(), err)
	}
	url, _, _ := unstructured.NestedString(obj.Object, "spec", "url")
	url, _ = sources.StripUserinfo(url)
	origin := sources.Origin{Source: s.cfg.Name, URL: url, Path: s.path, Digest: art.digest}
	origin.Message = "artifact of " + s.Object()
	switch s.cfg.Kind {
	case KindGitRepository:
		origin.Kind = sources.KindGit
		if ref, commit, ok := oci.ParseRevision(art.revision); ok {
			origin.Ref, origin.Commit = ref, commit
		} else {
			origin.Ref = art.revision
		}
	case KindOCIRepository:
		origin.Kind = sources.KindOCI
		ref, digest, _ := strings.Cut(art.revision, "@")
		if strings.HasPrefix(ref, "sha256:") {
			ref, digest = "", ref
		}
		origin.Ref = ref
		if digest != "" {
			origin.Digest = digest
		}
		if _, commit, ok := oci.ParseRevision(art.metadata[oci.RevisionAnnotation]); ok {
			origin.Commit = commit
		}
	}
	res := &sources.Result{
		Snapshot: sources.Snapshot{Files: tree, Origin: origin},
		Content:  contentOf(files),
	}
	res.Changed = s.last == nil || s.last.Content != res.Content
	s.last, s.verified = res, art
	charge.Keep()
	return res, nil
}

// artifactOf reads status.artifact, or says why the object has none.
func (s *Source) artifactOf(obj *unstructured.Unstructured) (artifact, error) {
	m, found, err := unstructured.NestedMap(obj.Object, "status", "artifact")
	if err != nil || !found {
		why := ""
		if ready := readyMessage(obj); ready != "" {
			why = " (Ready: " + ready + ")"
		}
		return artifact{}, fmt.Errorf("%s has no artifact yet%s", s.Object(), why)
	}
	str := func(k string) string { v, _ := m[k].(string); return v }
	art := artifact{url: str("url"), digest: str("digest"), revision: str("revision"), metadata: map[string]string{}}
	if md, ok := m["metadata"].(map[string]any); ok {
		for k, v := range md {
			if sv, ok := v.(string); ok {
				art.metadata[k] = sv
			}
		}
	}
	switch {
	case art.url == "":
		return artifact{}, fmt.Errorf("%s: status.artifact.url is empty", s.Object())
	case !strings.HasPrefix(art.url, "http://") && !strings.HasPrefix(art.url, "https://"):
		return artifact{}, fmt.Errorf("%s: status.artifact.url %q is not an http(s) URL", s.Object(), sources.Redact(art.url))
	case art.digest == "":
		return artifact{}, fmt.Errorf("%s: status.artifact.digest is empty: legate serves only artifacts it can verify (Flux v2.1 or later writes the digest)", s.Object())
	}
	if _, err := newDigester(art.digest); err != nil {
		return artifact{}, fmt.Errorf("%s: status.artifact.digest: %w", s.Object(), err)
	}
	return art, nil
}

// download fetches and unpacks the artifact, verifying its digest over
// every byte read; the files kept are counted against charge.
func (s *Source) download(ctx context.Context, art artifact, charge *sources.Charge) (map[string][]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	url, _ := sources.StripUserinfo(art.url)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, art.url, nil)
	if err != nil {
		// url.Parse's error quotes the URL, password and all.
		return nil, fmt.Errorf("the artifact of %s: %s", s.Object(), sources.Redact(err.Error()))
	}
	resp, err := s.cfg.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("download the artifact of %s from %s: %s", s.Object(), url, sources.Redact(err.Error(), art.url))
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download the artifact of %s from %s: %s", s.Object(), url, resp.Status)
	}
	d, _ := newDigester(art.digest)
	files, err := oci.Extract(io.TeeReader(resp.Body, d.h), s.path, s.cfg.Limits, charge)
	if err != nil { // refused before its digest could be checked
		return nil, fmt.Errorf("the artifact of %s (revision %s): %w", s.Object(), art.revision, err)
	}
	if got := d.sum(); got != art.digest {
		return nil, fmt.Errorf("the artifact of %s: %w: %s says %s, the download from %s is %s; the last verified configuration stays", s.Object(), ErrDigestMismatch, s.cfg.Kind, art.digest, url, got)
	}
	return files, nil
}

// digester hashes a download with the algorithm of the expected digest.
type digester struct {
	algo string
	h    hash.Hash
}

func newDigester(digest string) (digester, error) {
	algo, hexsum, ok := strings.Cut(digest, ":")
	if !ok || hexsum == "" {
		return digester{}, fmt.Errorf("%q is not ALGORITHM:HEX", digest)
	}
	if algo != "sha256" {
		return digester{}, fmt.Errorf("digest algorithm %q is not supported (sha256 is)", algo)
	}
	return digester{algo: algo, h: sha256.New()}, nil
}

func (d digester) sum() string { return d.algo + ":" + hex.EncodeToString(d.h.Sum(nil)) }

// contentOf identifies the files under the path, whatever artifact they
// came in: a commit that changes nothing under it renders nothing new.
func contentOf(files map[string][]byte) string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	h := sha256.New()
	for _, n := range names {
		_, _ = fmt.Fprintf(h, "%d:%s%d:", len(n), n, len(files[n]))
		_, _ = h.Write(files[n])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// readyMessage is the message of the object's Ready condition, if any.
func readyMessage(obj *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Ready" {
			msg, _ := m["message"].(string)
			return msg
		}
	}
	return ""
}

var _ sources.Source = (*Source)(nil)
