package standalone

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Defaults of Config.
const (
	DefaultXDSAddr  = ":18000"
	DefaultHTTPAddr = ":8080"
	DefaultInterval = time.Minute
	DefaultStateDir = ".legate"
)

// Config is what `legate serve` runs with, from flags or a YAML file
// (`--config`); both spell the same fields.
type Config struct {
	// Sources are the repositories and artifacts to follow.
	Sources []SourceConfig `json:"sources"`
	// DefaultNode is the node ID of files that name none.
	DefaultNode string `json:"node,omitempty"`
	// XDSAddr is where the ADS server listens (default ":18000").
	XDSAddr string `json:"xdsAddr,omitempty"`
	// HTTPAddr is where health, metrics and the status API listen
	// (default ":8080").
	HTTPAddr string `json:"httpAddr,omitempty"`
	// StateDir holds the embedded store and the sources' clones.
	StateDir string `json:"stateDir,omitempty"`
	// History bounds each node's revision history (default 10).
	History int `json:"history,omitempty"`
	// TaintThreshold is the share of a node's proxies that must reject a
	// revision to taint it, in (0, 1] (default 1).
	TaintThreshold float64 `json:"taintThreshold,omitempty"`
	// AnswerTimeout is how long to wait for every proxy's answer before a
	// revision is judged on the answers at hand (default 30s).
	AnswerTimeout Duration `json:"answerTimeout,omitempty"`
	// AdminTokenFile, when set, holds a bearer token required by the
	// mutating API calls (fetch triggers, clearing taints). Without it they
	// are accepted from loopback clients only.
	AdminTokenFile string `json:"adminTokenFile,omitempty"`
}

// SourceConfig is one source.
type SourceConfig struct {
	// Name identifies the source in statuses, metrics and the API.
	Name string `json:"name"`
	// Git follows a Git repository.
	Git *GitSource `json:"git,omitempty"`
	// Interval is the poll interval (default 1m).
	Interval Duration `json:"interval,omitempty"`
	// Path is the directory inside the repository or artifact.
	Path string `json:"path,omitempty"`
}

// GitSource is a Git repository to follow.
type GitSource struct {
	// URL is a local path, file://, http(s):// or ssh:// URL.
	URL string `json:"url"`
	// Branch to follow; empty follows the remote's default branch.
	Branch string `json:"branch,omitempty"`
}

// Duration is a time.Duration written as "30s" in YAML.
type Duration struct{ time.Duration }

// UnmarshalJSON reads "1m30s"-style strings.
func (d *Duration) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" {
		d.Duration = 0
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return []byte(`"` + d.String() + `"`), nil }

// LoadConfig reads a YAML config file. Unknown fields are errors.
func LoadConfig(path string) (Config, error) {
	var cfg Config
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("read config: %w", err)
	}
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// withDefaults fills unset fields.
func (c Config) withDefaults() Config {
	if c.XDSAddr == "" {
		c.XDSAddr = DefaultXDSAddr
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = DefaultHTTPAddr
	}
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir
	}
	srcs := make([]SourceConfig, len(c.Sources))
	for i, s := range c.Sources {
		if s.Interval.Duration == 0 {
			s.Interval.Duration = DefaultInterval
		}
		srcs[i] = s
	}
	c.Sources = srcs
	return c
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if len(c.Sources) == 0 {
		errs = append(errs, errors.New("no source configured: set --git-url or sources in --config"))
	}
	seen := map[string]bool{}
	for i, s := range c.Sources {
		where := fmt.Sprintf("sources[%d]", i)
		if s.Name == "" {
			errs = append(errs, fmt.Errorf("%s.name: required", where))
		} else if seen[s.Name] {
			errs = append(errs, fmt.Errorf("%s.name: %q is used by another source", where, s.Name))
		}
		seen[s.Name] = true
		if s.Git == nil {
			errs = append(errs, fmt.Errorf("%s: set git", where))
		} else if s.Git.URL == "" {
			errs = append(errs, fmt.Errorf("%s.git.url: required", where))
		}
		if s.Interval.Duration < 0 {
			errs = append(errs, fmt.Errorf("%s.interval: must not be negative", where))
		}
	}
	if c.History < 0 {
		errs = append(errs, fmt.Errorf("history: must be at least 1, got %d", c.History))
	}
	if c.TaintThreshold < 0 || c.TaintThreshold > 1 {
		errs = append(errs, fmt.Errorf("taintThreshold: must be in (0, 1], got %g", c.TaintThreshold))
	}
	return errors.Join(errs...)
}
