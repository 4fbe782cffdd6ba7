package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/legate-dev/legate/core"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/standalone"
)

// serveFlags are the flags of `legate serve`; each overrides the same
// field of the --config file when set.
type serveFlags struct {
	configFile     string
	gitURL         string
	gitRef         string
	path           string
	interval       time.Duration
	node           string
	maxFileSize    int64
	xdsAddr        string
	httpAddr       string
	stateDir       string
	adminTokenFile string
	sourceFlags    []string
	publicURL      string
	hookSecretFile []string
	hookSecretEnv  []string
	secretsDir     string
	xdsTLSCert     string
	xdsTLSKey      string
	xdsClientCA    string
	allowedHosts   []string
	plainSecrets   []string
	// tuning holds the knobs both homes share (core.Tuning.AddFlags).
	tuning core.Tuning
}

func newServeCommand() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use: "serve",
		Example: `  # one repository, files that name no node are for node edge
  legate serve --git-url https://git.example/org/envoy-config.git --path envoy --node edge
  # several sources and the rest from a file
  legate serve --config legate.yaml --log-format json --log-level warn`,
		Short: "Run the standalone control plane on the embedded store",
		Long: `serve follows Git repositories and OCI artifacts, validates every commit,
keeps accepted configurations as revisions in an embedded store under
--state-dir, serves the published revision over xDS (ADS) and rolls back by
itself when proxies reject one. Push webhooks (/hooks/gitea, /hooks/github,
/hooks/gitlab, /hooks/generic on --http-addr) trigger an immediate fetch, and
sources with a forge get a commit status per node on every commit. It needs no
Kubernetes. docs/standalone.md describes the configuration, docs/tuning.md
the knobs both homes share.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config(cmd.Flags())
			if err != nil {
				return err
			}
			log, err := cfg.Tuning().Logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			srv, err := standalone.New(cfg, standalone.Options{Render: newRenderOptions(), Log: log})
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return srv.Run(ctx)
		},
	}
	f.bind(cmd.Flags())
	return cmd
}

// bind defines the flags of `legate serve` on fl, stored in f.
func (f *serveFlags) bind(fl *pflag.FlagSet) {
	fl.StringVar(&f.configFile, "config", "", "YAML file with the same settings as the flags (flags win)")
	fl.StringVar(&f.gitURL, "git-url", "", "Git repository to follow: a local path, file://, http(s):// or ssh:// URL")
	fl.StringVar(&f.gitRef, "git-ref", "", "branch to follow (default: the remote's default branch)")
	fl.StringVar(&f.path, "path", "", "directory inside the repository that holds the configuration")
	fl.DurationVar(&f.interval, "interval", serveconfig.DefaultInterval, "poll interval")
	fl.StringVar(&f.node, "node", "", "node ID of files that name none")
	fl.Int64Var(&f.maxFileSize, "max-file-size", render.DefaultMaxFileSize, "largest configuration file rendered, in bytes (as legate validate --max-file-size)")
	fl.StringVar(&f.xdsAddr, "xds-addr", serveconfig.DefaultXDSAddr, "address of the xDS (ADS) server")
	fl.StringVar(&f.httpAddr, "http-addr", serveconfig.DefaultHTTPAddr, "address of health checks, metrics and the status API")
	fl.StringVar(&f.stateDir, "state-dir", serveconfig.DefaultStateDir, "directory of the embedded store and the clones")
	fl.StringVar(&f.adminTokenFile, "admin-token-file", "", "file holding the bearer token of mutating API calls (default: <state-dir>/admin-token, made on the first start)")
	fl.StringSliceVar(&f.plainSecrets, "xds-insecure-secrets", nil, "external secrets holding keys or opaque values that may be served while xDS has no mutual TLS (names, or * for all)")
	fl.StringSliceVar(&f.allowedHosts, "http-allowed-hosts", nil, "further host names the HTTP API may be called by (IP addresses, localhost and --public-url's host always are)")
	fl.StringArrayVar(&f.sourceFlags, "source", nil, sourceFlagHelp)
	fl.StringVar(&f.publicURL, "public-url", "", "address people reach --http-addr at; commit statuses link to <public-url>/api/v1/nodes/<node>")
	fl.StringArrayVar(&f.hookSecretFile, "webhook-secret-file", nil, "PROVIDER=FILE: the push webhook secret of gitea, github, gitlab or generic, read from FILE (repeatable)")
	fl.StringVar(&f.secretsDir, "secrets-dir", "", "directory of the key material of the secrets configurations refer to: <dir>/<ref>/tls.crt, tls.key, ca.crt or the opaque key")
	fl.StringVar(&f.xdsTLSCert, "xds-tls-cert", "", "serve xDS over TLS with this certificate chain (PEM; reloaded when it changes)")
	fl.StringVar(&f.xdsTLSKey, "xds-tls-key", "", "the private key of --xds-tls-cert (PEM)")
	fl.StringVar(&f.xdsClientCA, "xds-client-ca", "", "require client certificates signed by this CA (PEM) and let each fetch only the node IDs it names (DNS name, URI or common name)")
	f.tuning.AddFlags(fl)
	fl.StringArrayVar(&f.hookSecretEnv, "webhook-secret-env", nil, "PROVIDER=VAR: the push webhook secret of gitea, github, gitlab or generic, read from the environment variable VAR (repeatable)")
}

// config merges the --config file and the flags that were set.
func (f *serveFlags) config(fl *pflag.FlagSet) (serveconfig.Config, error) {
	var cfg serveconfig.Config
	if f.configFile != "" {
		var err error
		if cfg, err = serveconfig.LoadConfig(f.configFile); err != nil {
			return cfg, err
		}
	}
	set := func(name string) bool { return fl.Changed(name) || f.configFile == "" }
	if fl.Changed("git-url") {
		src := serveconfig.SourceConfig{
			Name:     "default",
			Git:      &serveconfig.GitSource{URL: f.gitURL, Branch: f.gitRef},
			Path:     f.path,
			Interval: serveconfig.Duration{Duration: f.interval},
		}
		cfg.Sources = append([]serveconfig.SourceConfig{src}, cfg.Sources...)
	} else if fl.Changed("git-ref") || fl.Changed("path") {
		return cfg, fmt.Errorf("--git-ref and --path need --git-url")
	}
	for _, v := range f.sourceFlags {
		sc, err := parseSourceFlag(v)
		if err != nil {
			return cfg, err
		}
		cfg.Sources = append(cfg.Sources, sc)
	}
	if err := setHookSecrets(&cfg.Webhooks, f.hookSecretFile, false); err != nil {
		return cfg, err
	}
	if err := setHookSecrets(&cfg.Webhooks, f.hookSecretEnv, true); err != nil {
		return cfg, err
	}
	if set("public-url") {
		cfg.PublicURL = f.publicURL
	}
	if set("node") {
		cfg.DefaultNode = f.node
	}
	if set("max-file-size") {
		cfg.MaxFileSize = f.maxFileSize
	}
	if set("xds-addr") {
		cfg.XDSAddr = f.xdsAddr
	}
	if set("http-addr") {
		cfg.HTTPAddr = f.httpAddr
	}
	if set("state-dir") {
		cfg.StateDir = f.stateDir
	}
	tuning := cfg.Tuning()
	tuning.Override(f.tuning, set)
	cfg.SetTuning(tuning)
	if set("admin-token-file") {
		cfg.AdminTokenFile = f.adminTokenFile
	}
	if set("xds-insecure-secrets") {
		cfg.XDSInsecureSecrets = f.plainSecrets
	}
	if set("http-allowed-hosts") {
		cfg.HTTPAllowedHosts = f.allowedHosts
	}
	if set("secrets-dir") {
		cfg.SecretsDir = f.secretsDir
	}
	if fl.Changed("xds-tls-cert") || fl.Changed("xds-tls-key") || fl.Changed("xds-client-ca") {
		if cfg.XDSTLS == nil {
			cfg.XDSTLS = &serveconfig.XDSTLSConfig{}
		}
		for name, v := range map[string]struct{ dst, src *string }{
			"xds-tls-cert":  {&cfg.XDSTLS.CertFile, &f.xdsTLSCert},
			"xds-tls-key":   {&cfg.XDSTLS.KeyFile, &f.xdsTLSKey},
			"xds-client-ca": {&cfg.XDSTLS.ClientCAFile, &f.xdsClientCA},
		} {
			if fl.Changed(name) {
				*v.dst = *v.src
			}
		}
	}
	err := cfg.Validate()
	if err != nil && f.configFile != "" {
		// Send the author of the file to the line of each problem in it.
		first := 0
		if fl.Changed("git-url") {
			first = 1
		}
		if data, rerr := os.ReadFile(f.configFile); rerr == nil {
			err = serveconfig.Locate(err, f.configFile, data, first)
		}
	}
	return cfg, err
}

// setHookSecrets applies PROVIDER=VALUE webhook secret flags.
func setHookSecrets(w *serveconfig.WebhookConfig, vals []string, env bool) error {
	for _, v := range vals {
		provider, val, ok := strings.Cut(v, "=")
		if !ok || val == "" {
			return fmt.Errorf("webhook secret %q: want PROVIDER=VALUE", v)
		}
		var dst *sources.Secret
		switch provider {
		case "gitea":
			dst = &w.Gitea
		case "github":
			dst = &w.GitHub
		case "gitlab":
			dst = &w.GitLab
		case "generic":
			dst = &w.Generic
		default:
			return fmt.Errorf("webhook secret %q: provider %q is not gitea, github, gitlab or generic", v, provider)
		}
		if env {
			*dst = sources.Secret{Env: val}
		} else {
			*dst = sources.Secret{File: val}
		}
	}
	return nil
}
