package serveconfig

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/legate-dev/legate/core"
	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/rollout/analysis"
	"github.com/legate-dev/legate/sds"
	"github.com/legate-dev/legate/sources"
	gitsource "github.com/legate-dev/legate/sources/git"
	ocisource "github.com/legate-dev/legate/sources/oci"
)

// validName keeps source names usable in URLs, metrics and file names.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// Validate reports every problem of the configuration at once; each names
// the field, e.g. "sources[1].git.url: required".
func (c Config) Validate() error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if len(c.Sources) == 0 {
		errs = append(errs, errors.New("no source configured: set --git-url, --source or sources in --config"))
	}
	seen := map[string]int{}
	for i, s := range c.Sources {
		where := fmt.Sprintf("sources[%d]", i)
		switch {
		case s.Name == "":
			add(where+".name", "required")
		case !validName.MatchString(s.Name):
			add(where+".name", "%q must be letters, digits, '.', '_' or '-' (at most 63)", s.Name)
		default:
			if j, dup := seen[s.Name]; dup {
				add(where+".name", "%q is also the name of sources[%d]", s.Name, j)
			} else {
				seen[s.Name] = i
			}
		}
		errs = append(errs, s.validate(where)...)
	}
	errs = append(errs, c.XDSTLS.validate()...)
	errs = append(errs, c.Tuning().Problems()...)
	if c.SecretsInterval.Duration < 0 {
		add("secretsInterval", "must not be negative")
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("publicURL", "%q must be an absolute http(s) URL such as https://legate.example", c.PublicURL)
		} else if u.User != nil {
			add("publicURL", "must not carry credentials")
		}
	}
	for _, h := range []struct {
		name string
		sec  sources.Secret
	}{{"gitea", c.Webhooks.Gitea}, {"github", c.Webhooks.GitHub}, {"gitlab", c.Webhooks.GitLab}, {"generic", c.Webhooks.Generic}} {
		if err := secretShape(h.sec); err != nil {
			add("webhooks."+h.name, "%v", err)
		}
	}
	return errors.Join(errs...)
}

func secretShape(s sources.Secret) error {
	if s.File != "" && s.Env != "" {
		return fmt.Errorf("set file or env, not both")
	}
	return nil
}

func (s SourceConfig) validate(where string) []error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if s.Interval.Duration < 0 {
		add(where+".interval", "must not be negative")
	}
	for i, g := range s.Secrets {
		if err := sds.GrantShape(g); err != nil {
			add(fmt.Sprintf("%s.secrets[%d]", where, i), "%v", err)
		}
	}
	switch {
	case s.Git != nil && s.OCI != nil:
		add(where, "set git or oci, not both")
		return errs
	case s.Git == nil && s.OCI == nil:
		add(where, "set git or oci")
		return errs
	}
	if s.Path != "" && s.path() != s.Path {
		add(where+".path", "%q differs from the path set inside %s", s.Path, s.kind())
	}
	if s.Git != nil {
		errs = append(errs, s.validateGit(where+".git")...)
	}
	if s.OCI != nil {
		errs = append(errs, s.validateOCI(where+".oci")...)
	}
	if s.Forge != nil {
		errs = append(errs, s.validateForge(where+".forge")...)
	}
	if p := s.Previews; p != nil {
		if p.Concurrency < 0 || p.Concurrency > 64 {
			add(where+".previews.concurrency", "%d is outside 0..64", p.Concurrency)
		}
		if p.Enabled {
			switch {
			case s.Git == nil:
				add(where+".previews", "pull-request previews need a git source")
			case s.Forge == nil:
				add(where+".previews", "pull-request previews need a forge to post their status and comment to: set forge")
			case s.Git.GitRef().Branch == "" || s.Git.GitRef().Commit != "" || s.Git.GitRef().Name != "" || s.Git.GitRef().Tag != "" || s.Git.GitRef().SemVer != "":
				add(where+".previews", "pull-request previews need a source that follows a branch: set git.branch (pull requests target a branch)")
			}
		}
	}
	if s.Rollout != nil {
		plan, err := s.Rollout.Compile(where + ".rollout")
		if err != nil {
			errs = append(errs, err)
		} else if _, err := core.AnalysisSpec(plan.Analysis, where+".rollout.analysis"); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// RolloutPlans compiles every source's rollout policy, by source name.
// Validate has checked them.
func (c Config) RolloutPlans() (map[string]*rollout.Plan, error) {
	plans := map[string]*rollout.Plan{}
	for i, s := range c.Sources {
		if s.Rollout == nil {
			continue
		}
		p, err := s.Rollout.Compile(fmt.Sprintf("sources[%d].rollout", i))
		if err != nil {
			return nil, err
		}
		plans[s.Name] = p
	}
	return plans, nil
}

// Analyses is the analyzer of the sources' rollout analyses: header
// values come from files (valueFrom.file), there being no Secrets here.
func (c Config) Analyses(plans map[string]*rollout.Plan) (rollout.Analyzer, error) {
	specs := map[string]*analysis.Spec{}
	for i, s := range c.Sources {
		p := plans[s.Name]
		if p == nil {
			continue
		}
		spec, err := core.AnalysisSpec(p.Analysis, fmt.Sprintf("sources[%d].rollout.analysis", i))
		if err != nil {
			return nil, err
		}
		if spec != nil {
			specs[s.Name] = spec
		}
	}
	return core.Analyses{Specs: specs, Runner: analysis.NewRunner(analysis.Options{Secrets: analysis.FileSecrets{}})}, nil
}

func (s SourceConfig) validateGit(where string) []error {
	g := s.Git
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if g.URL == "" {
		add(where+".url", "required")
		return errs
	}
	if g.Ref != nil && g.Ref.Branch != "" && g.Branch != "" && g.Ref.Branch != g.Branch {
		add(where+".branch", "%q differs from ref.branch %q: set one", g.Branch, g.Ref.Branch)
	}
	if g.Timeout.Duration < 0 {
		add(where+".timeout", "must not be negative")
	}
	if g.Auth != nil {
		for _, a := range []struct {
			field string
			sec   sources.Secret
		}{{"password", g.Auth.Password}, {"bearerToken", g.Auth.BearerToken}, {"sshKey", g.Auth.SSHKey}, {"sshKeyPassphrase", g.Auth.SSHKeyPassphrase}} {
			if err := secretShape(a.sec); err != nil {
				add(where+".auth."+a.field, "%v", err)
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	// The driver checks the rest (URL scheme, ref forms, one credential);
	// building it touches neither the network nor the disk.
	if _, err := gitsource.New(s.GitConfig("/nonexistent")); err != nil {
		add(where, "%v", err)
	}
	return errs
}

func (s SourceConfig) validateOCI(where string) []error {
	o := s.OCI
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	switch {
	case o.URL == "":
		add(where+".url", "required")
	case !strings.HasPrefix(o.URL, "oci://"):
		add(where+".url", "%q must start with oci://", sources.Redact(o.URL))
	default:
		if _, err := ocisource.New(s.ociConfig()); err != nil {
			add(where, "%v", err)
		}
	}
	if o.Timeout.Duration < 0 {
		add(where+".timeout", "must not be negative")
	}
	return errs
}

func (s SourceConfig) validateForge(where string) []error {
	f := s.Forge
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	switch f.Provider {
	case forge.ProviderGitea, forge.ProviderGitHub, forge.ProviderGitLab:
	case "":
		add(where+".provider", "required: gitea, github or gitlab")
		return errs
	default:
		add(where+".provider", "%q is not gitea, github or gitlab", f.Provider)
		return errs
	}
	if !f.Token.IsSet() {
		add(where+".token", "required: a file or env holding a token that may write commit statuses")
	} else if err := secretShape(f.Token); err != nil {
		add(where+".token", "%v", err)
	}
	fc := s.forgeConfig()
	if fc.Repository == "" {
		add(where+".repository", "required: owner/name (it cannot be taken from the source's URL)")
	}
	if f.Provider == forge.ProviderGitea && fc.BaseURL == "" {
		add(where+".baseURL", "required for gitea (it cannot be taken from the source's URL)")
	}
	if len(errs) == 0 {
		if _, err := forge.New(f.Provider, fc); err != nil {
			add(where, "%v", err)
		}
	}
	return errs
}

// Reporter is the commit-status reporter of a source with a forge
// (Forge set).
func (s SourceConfig) Reporter() (forge.Reporter, error) {
	return forge.New(s.Forge.Provider, s.forgeConfig())
}

// forgeConfig is the reporter configuration, with the base URL and the
// repository taken from the source's URL when not set.
func (s SourceConfig) forgeConfig() forge.Config {
	f := s.Forge
	fc := forge.Config{BaseURL: f.BaseURL, Repository: f.Repository, Token: forge.SecretToken(f.Token)}
	if s.Git == nil {
		return fc
	}
	base, repo := forge.FromRepositoryURL(f.Provider, s.Git.URL)
	fc.BaseURL, fc.Repository = cmp.Or(fc.BaseURL, base), cmp.Or(fc.Repository, repo)
	return fc
}
