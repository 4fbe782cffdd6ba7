package oci

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/legate-dev/legate/sources"
)

// Source is an OCI artifact source. It implements sources.Source; Fetch
// calls are serialised by the Source itself.
type Source struct {
	cfg  Config
	repo name.Repository
	path string

	mu   sync.Mutex
	last *sources.Result
	// transport is the guarded transport of every request (nil: ggcr's
	// default), kept for its connections.
	transport http.RoundTripper
}

// New validates cfg and applies defaults; it does not touch the network.
func New(cfg Config) (*Source, error) {
	cfg.setDefaults()
	repo, err := cfg.repository()
	if err != nil {
		return nil, err
	}
	p, err := sources.CleanPath(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("oci source %q: %w", cfg.Name, err)
	}
	src := &Source{cfg: cfg, repo: repo, path: p}
	if cfg.Guard != nil {
		src.transport = cfg.Guard.Transport(blobRedirect)
	}
	return src, nil
}

// blobRedirect allows a blob download to be redirected to another host:
// registries serve blobs from their storage (S3, a CDN) that way. Every
// hop is still dialled through the guard.
func blobRedirect(next *http.Request) bool {
	first := next
	for first.Response != nil && first.Response.Request != nil {
		first = first.Response.Request
	}
	return first.Method == http.MethodGet && strings.Contains(first.URL.Path, "/blobs/sha256:")
}

// Name implements sources.Source.
func (s *Source) Name() string { return s.cfg.Name }

// URL is the oci:// URL of the repository.
func (s *Source) URL() string { return "oci://" + s.repo.Name() }

// Fetch implements sources.Source. It resolves the ref to a manifest digest
// and downloads the content layer only when the digest differs from the
// previous fetch's.
func (s *Source) Fetch(ctx context.Context) (*sources.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kc, secrets, err := loadDockerConfig(s.cfg.DockerConfig, s.cfg.DockerConfigJSON)
	if err != nil {
		return nil, fmt.Errorf("oci source %q: %w", s.cfg.Name, err)
	}
	res, err := s.fetch(ctx, kc)
	if err != nil {
		return nil, &scrubbedError{
			msg: sources.Redact(fmt.Sprintf("oci source %q (%s): %s", s.cfg.Name, s.URL(), err), secrets...),
			err: err,
		}
	}
	res.Changed = s.last == nil || s.last.Content != res.Content
	s.last = res
	return res, nil
}

func (s *Source) fetch(ctx context.Context, kc *dockerConfigKeychain) (*sources.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	transport := s.transport
	if transport == nil {
		transport = remote.DefaultTransport
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(kc), remote.WithTransport(boundedAnswers{next: transport})}
	ref, display, err := s.reference(ctx, opts)
	if err != nil {
		return nil, err
	}
	desc, err := remote.Get(ref, opts...)
	if err != nil {
		return nil, fmt.Errorf("get manifest of %s: %w", ref, err)
	}
	if desc.MediaType.IsIndex() {
		return nil, fmt.Errorf("%s is an image index (%s), not an artifact: push a single-manifest artifact", ref, desc.MediaType)
	}
	if s.last != nil && s.last.Origin.Digest == desc.Digest.String() && s.last.Origin.Ref == display {
		prev := *s.last
		return &prev, nil
	}
	img, err := desc.Image()
	if err != nil {
		return nil, fmt.Errorf("read manifest of %s: %w", ref, err)
	}
	manifest, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("read manifest of %s: %w", ref, err)
	}
	layerDesc, err := contentLayer(manifest)
	if err != nil {
		return nil, fmt.Errorf("artifact %s: %w", ref, err)
	}
	if layerDesc.Size > s.cfg.MaxArtifactSize {
		return nil, fmt.Errorf("artifact %s has a %d-byte layer, over the artifact size limit of %d bytes", ref, layerDesc.Size, s.cfg.MaxArtifactSize)
	}
	layer, err := img.LayerByDigest(layerDesc.Digest)
	if err != nil {
		return nil, fmt.Errorf("artifact %s: layer %s: %w", ref, layerDesc.Digest, err)
	}
	rc, err := layer.Compressed()
	if err != nil {
		return nil, fmt.Errorf("download layer %s of %s: %w", layerDesc.Digest, ref, err)
	}
	defer rc.Close()
	charge := s.cfg.Budget.Fetch(s.cfg.Name)
	defer charge.Drop()
	files, err := Extract(rc, s.path, Limits{Compressed: s.cfg.MaxArtifactSize, Extracted: s.cfg.MaxExtractedSize, Files: s.cfg.MaxFiles}, charge)
	if err != nil {
		return nil, fmt.Errorf("artifact %s: %w", ref, err)
	}
	if err := rc.Close(); err != nil { // verifies the layer digest
		return nil, fmt.Errorf("artifact %s: layer %s: %w", ref, layerDesc.Digest, err)
	}
	if s.path != "." && len(files) == 0 {
		return nil, fmt.Errorf("artifact %s has no files under path %q", ref, s.path)
	}
	tree, err := sources.NewTree(files)
	if err != nil {
		return nil, fmt.Errorf("artifact %s: %w", ref, err)
	}
	origin := sources.Origin{
		Kind:   sources.KindOCI,
		Source: s.cfg.Name,
		URL:    s.URL(),
		Ref:    display,
		Path:   s.path,
		Digest: desc.Digest.String(),
	}
	if _, commit, ok := ParseRevision(manifest.Annotations[RevisionAnnotation]); ok {
		origin.Commit = commit
	}
	if src := manifest.Annotations[SourceAnnotation]; src != "" {
		origin.Message = "built from " + sources.Redact(src)
	}
	charge.Keep() // Fetch keeps every result fetch returns
	return &sources.Result{
		Snapshot: sources.Snapshot{Files: tree, Origin: origin},
		Content:  layerDesc.Digest.String() + ":" + s.path,
	}, nil
}

// reference applies the precedence digest > semver > tag (default latest).
// The display form is the tag followed ("" for a pinned digest).
func (s *Source) reference(ctx context.Context, opts []remote.Option) (name.Reference, string, error) {
	var nameOpts []name.Option
	if s.cfg.Insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	switch {
	case s.cfg.Ref.Digest != "":
		d, err := name.NewDigest(s.repo.Name()+"@"+s.cfg.Ref.Digest, nameOpts...)
		return d, "", err
	case s.cfg.Ref.SemVer != "":
		tags, err := listTags(ctx, s.repo, opts)
		if err != nil {
			return nil, "", fmt.Errorf("list tags: %w", err)
		}
		tag, err := pickSemVer(s.cfg.Ref.SemVer, tags)
		if err != nil {
			return nil, "", err
		}
		return s.repo.Tag(tag), tag, nil
	default:
		tag := s.cfg.Ref.Tag
		if tag == "" {
			tag = "latest"
		}
		return s.repo.Tag(tag), tag, nil
	}
}

func pickSemVer(rng string, tags []string) (string, error) {
	c, err := semver.NewConstraint(rng)
	if err != nil {
		return "", fmt.Errorf("semver range %q: %w", rng, err)
	}
	sort.Strings(tags)
	var best *semver.Version
	bestTag := ""
	for _, tag := range tags {
		v, err := semver.NewVersion(tag)
		if err != nil || !c.Check(v) {
			continue
		}
		if best == nil || v.GreaterThan(best) {
			best, bestTag = v, tag
		}
	}
	if best == nil {
		return "", fmt.Errorf("no tag matches semver range %q", rng)
	}
	return bestTag, nil
}

// contentLayer picks the layer to unpack: the Flux content layer, else the
// only layer when it is a tar or tar+gzip.
func contentLayer(m *v1.Manifest) (v1.Descriptor, error) {
	for _, l := range m.Layers {
		if l.MediaType == FluxContentMediaType {
			return l, nil
		}
	}
	if len(m.Layers) == 1 && isTarMediaType(string(m.Layers[0].MediaType)) {
		return m.Layers[0], nil
	}
	types := make([]string, 0, len(m.Layers))
	for _, l := range m.Layers {
		types = append(types, string(l.MediaType))
	}
	return v1.Descriptor{}, fmt.Errorf("no layer of media type %s and not a single tar layer (layers: %v)", FluxContentMediaType, types)
}

func isTarMediaType(mt string) bool {
	switch mt {
	case "application/vnd.oci.image.layer.v1.tar",
		"application/vnd.oci.image.layer.v1.tar+gzip",
		"application/vnd.docker.image.rootfs.diff.tar.gzip",
		"application/vnd.docker.image.rootfs.diff.tar",
		"application/x-tar", "application/gzip", "application/tar+gzip":
		return true
	}
	return false
}

// scrubbedError carries a message without credentials; it answers errors.Is
// for the wrapped error but does not unwrap to its text.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string        { return e.msg }
func (e *scrubbedError) Is(target error) bool { return errors.Is(e.err, target) }

// As finds a budget refusal (a file name and sizes, nothing secret).
func (e *scrubbedError) As(target any) bool {
	le, ok := target.(**sources.LimitError)
	return ok && errors.As(e.err, le)
}

var _ sources.Source = (*Source)(nil)
