package serveconfig

import (
	"fmt"

	"github.com/legate-dev/legate/sources"
	gitsource "github.com/legate-dev/legate/sources/git"
	ocisource "github.com/legate-dev/legate/sources/oci"
)

// GitConfig is the driver configuration of a git source.
func (s SourceConfig) GitConfig(stateDir string) gitsource.Config {
	g := s.Git
	cfg := gitsource.Config{
		Name:     s.Name,
		URL:      g.URL,
		Ref:      g.GitRef(),
		Path:     s.path(),
		StateDir: stateDir,
		Timeout:  g.Timeout.Duration,
		Depth:    g.Depth,
	}
	if a := g.Auth; a != nil {
		cfg.Auth = gitsource.Auth{
			Username:         a.Username,
			Password:         a.Password,
			BearerToken:      a.BearerToken,
			SSHKey:           a.SSHKey,
			SSHKeyPassphrase: a.SSHKeyPassphrase,
			KnownHosts:       a.KnownHosts,
		}
	}
	return cfg
}

// ociConfig is the driver configuration of an oci source.
func (s SourceConfig) ociConfig() ocisource.Config {
	o := s.OCI
	return ocisource.Config{
		Name:         s.Name,
		URL:          o.URL,
		Ref:          ocisource.Ref{Tag: o.Tag, SemVer: o.SemVer, Digest: o.Digest},
		Path:         s.path(),
		DockerConfig: o.DockerConfig,
		Insecure:     o.Insecure,
		Timeout:      o.Timeout.Duration,
	}
}

// BuiltSource is a constructed driver with what the status API shows of it.
type BuiltSource struct {
	Source sources.Source
	Kind   sources.Kind
	URL    string // without credentials
}

// Build constructs the source's driver; it touches neither the network nor
// the clone. The git sources built with one clones registry share a clone
// when they fetch the same repository alike (gitsource.Config.Clones).
func (s SourceConfig) Build(stateDir string, clones *gitsource.Clones) (BuiltSource, error) {
	switch {
	case s.Git != nil:
		cfg := s.GitConfig(stateDir)
		cfg.Clones = clones
		src, err := gitsource.New(cfg)
		if err != nil {
			return BuiltSource{}, fmt.Errorf("source %q: %w", s.Name, err)
		}
		return BuiltSource{Source: src, Kind: sources.KindGit, URL: src.URL()}, nil
	case s.OCI != nil:
		src, err := ocisource.New(s.ociConfig())
		if err != nil {
			return BuiltSource{}, fmt.Errorf("source %q: %w", s.Name, err)
		}
		return BuiltSource{Source: src, Kind: sources.KindOCI, URL: src.URL()}, nil
	default:
		return BuiltSource{}, fmt.Errorf("source %q: set git or oci", s.Name)
	}
}
