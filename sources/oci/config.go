package oci

import (
	"fmt"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/legate-dev/legate/netguard"
	"github.com/legate-dev/legate/sources"
)

// Media types of Flux artifacts (`flux push artifact`).
const (
	FluxConfigMediaType  = "application/vnd.cncf.flux.config.v1+json"
	FluxContentMediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"
	// RevisionAnnotation carries the commit the artifact was built from.
	RevisionAnnotation = "org.opencontainers.image.revision"
	// SourceAnnotation carries the repository the artifact was built from.
	SourceAnnotation = "org.opencontainers.image.source"
)

// Defaults applied by New for zero Config fields.
const (
	DefaultTimeout          = 60 * time.Second
	DefaultMaxArtifactSize  = 64 << 20  // compressed layer bytes
	DefaultMaxExtractedSize = 256 << 20 // bytes of all files in the archive
	DefaultMaxFiles         = 10000
)

// Config configures one OCI source.
type Config struct {
	// Name identifies the source (Origin.Source).
	Name string
	// URL is oci://<registry>/<repository>, without tag or digest.
	URL string
	// Ref selects the artifact; the zero Ref follows the "latest" tag.
	Ref Ref
	// Path is the directory inside the artifact that holds the
	// configuration; "" or "." is the root.
	Path string
	// DockerConfig is a Docker config.json whose "auths" section holds the
	// registry credentials (credential helpers are not run). "" is anonymous.
	DockerConfig string
	// DockerConfigJSON is the content of such a file, read already (from
	// a kubernetes.io/dockerconfigjson Secret); it wins over DockerConfig.
	DockerConfigJSON []byte
	// Insecure talks plain HTTP to the registry.
	Insecure bool
	// Timeout bounds one Fetch.
	Timeout time.Duration
	// MaxArtifactSize bounds the compressed layer, MaxExtractedSize the
	// total of the unpacked files (against decompression bombs), MaxFiles
	// their number.
	MaxArtifactSize  int64
	MaxExtractedSize int64
	MaxFiles         int
	// Budget bounds the files the source keeps in memory (those the
	// renderer reads), alone and with the other sources sharing it
	// (default: a budget of its own with sources.DefaultSourceBytes).
	Budget *sources.Budget
	// Guard, when set, keeps every request of a fetch (registry, token
	// service, blob storage) from addresses it refuses, checked on every
	// dial; a redirect to another host is followed only for a blob
	// download, where registries hand over to their storage. nil fetches
	// from anywhere (legate serve).
	Guard *netguard.Guard
}

// Ref selects an artifact like Flux's OCIRepository spec.ref: Digest wins
// over SemVer, SemVer over Tag.
type Ref struct {
	Tag    string `json:"tag,omitempty"`
	SemVer string `json:"semver,omitempty"`
	Digest string `json:"digest,omitempty"`
}

func (c *Config) setDefaults() {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxArtifactSize <= 0 {
		c.MaxArtifactSize = DefaultMaxArtifactSize
	}
	if c.MaxExtractedSize <= 0 {
		c.MaxExtractedSize = DefaultMaxExtractedSize
	}
	if c.MaxFiles <= 0 {
		c.MaxFiles = DefaultMaxFiles
	}
	if c.Budget == nil {
		c.Budget = sources.NewBudget(0, 0)
	}
}

// repository parses the oci:// URL.
func (c *Config) repository() (name.Repository, error) {
	if c.Name == "" {
		return name.Repository{}, fmt.Errorf("oci source needs a name")
	}
	// Every message below quotes the URL redacted: these errors reach
	// logs and an EnvoySource's status, and a URL may carry a password.
	shown := sources.Redact(c.URL)
	rest, ok := strings.CutPrefix(c.URL, "oci://")
	if !ok {
		return name.Repository{}, fmt.Errorf("oci source %q: url %q must start with oci://", c.Name, shown)
	}
	host, _, _ := strings.Cut(rest, "/")
	if strings.Contains(host, "@") {
		return name.Repository{}, fmt.Errorf("oci source %q: url %q must not carry credentials: give them as a Docker config file (docker-config) or the EnvoySource's secretRef", c.Name, shown)
	}
	if strings.Contains(rest, "@") {
		return name.Repository{}, fmt.Errorf("oci source %q: url %q must not carry a digest: set the digest ref instead", c.Name, shown)
	}
	if i := strings.LastIndex(rest, ":"); i > strings.LastIndex(rest, "/") {
		return name.Repository{}, fmt.Errorf("oci source %q: url %q must not carry a tag: set the tag ref instead", c.Name, shown)
	}
	var opts []name.Option
	if c.Insecure {
		opts = append(opts, name.Insecure)
	}
	repo, err := name.NewRepository(rest, opts...)
	if err != nil {
		return name.Repository{}, fmt.Errorf("oci source %q: url %q: %s", c.Name, shown, sources.Redact(err.Error()))
	}
	if c.Ref.Digest != "" {
		if _, err := name.NewDigest(repo.Name()+"@"+c.Ref.Digest, opts...); err != nil {
			return name.Repository{}, fmt.Errorf("oci source %q: digest %q: %w", c.Name, c.Ref.Digest, err)
		}
	}
	if c.Ref.SemVer != "" {
		if _, err := semver.NewConstraint(c.Ref.SemVer); err != nil {
			return name.Repository{}, fmt.Errorf("oci source %q: semver range %q: %w", c.Name, c.Ref.SemVer, err)
		}
	}
	return repo, nil
}
