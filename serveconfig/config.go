package serveconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/core"
	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/sources"
	gitsource "github.com/legate-dev/legate/sources/git"
)

// Defaults of Config.
const (
	DefaultXDSAddr  = "127.0.0.1:18000"
	DefaultHTTPAddr = "127.0.0.1:8080"
	DefaultInterval = time.Minute
	DefaultStateDir = ".legate"
	// DefaultSecretsInterval is how often the secrets directory is
	// checked for changed files.
	DefaultSecretsInterval = 5 * time.Second
)

// Config is what `legate serve` runs with, from flags or a YAML file
// (`--config`); both spell the same fields.
type Config struct {
	// Sources are the repositories and artifacts to follow.
	Sources []SourceConfig `json:"sources"`
	// DefaultNode is the node ID of files that name none.
	DefaultNode string `json:"node,omitempty"`
	// MaxFileSize is the largest configuration file rendered, in bytes
	// (default render.DefaultMaxFileSize), as `legate validate
	// --max-file-size`.
	MaxFileSize int64 `json:"maxFileSize,omitempty"`
	// XDSAddr is where the ADS server listens (default "127.0.0.1:18000").
	// Beyond loopback it must run over mutual TLS (XDSTLS with a client
	// CA) unless XDSInsecure says otherwise.
	XDSAddr string `json:"xdsAddr,omitempty"`
	// XDSInsecure allows serving xDS beyond loopback without mutual TLS:
	// then anyone who reaches the port may fetch any node's configuration
	// and answer for its proxies.
	XDSInsecure bool `json:"xdsInsecure,omitempty"`
	// XDSInsecureSecrets names the external secrets holding key material
	// (TLS keys, opaque values) that may be served while xDS runs without
	// mutual TLS; "*" names all. Without mutual TLS any client that reaches
	// the port can ask for them.
	XDSInsecureSecrets []string `json:"xdsInsecureSecrets,omitempty"`
	// XDSTLS, when set, serves xDS over TLS, or over mutual TLS with
	// node binding when it names a client CA.
	XDSTLS *XDSTLSConfig `json:"xdsTLS,omitempty"`
	// HTTPAddr is where health, metrics, the status API and the push
	// webhooks listen (default "127.0.0.1:8080").
	HTTPAddr string `json:"httpAddr,omitempty"`
	// HTTPAllowedHosts are further names the HTTP API may be called by
	// (the Host header); IP addresses, localhost, the listen host and
	// PublicURL's host are always allowed.
	HTTPAllowedHosts []string `json:"httpAllowedHosts,omitempty"`
	// PublicURL is the address people reach HTTPAddr at (e.g.
	// https://legate.example). Commit statuses link to
	// <PublicURL>/api/v1/nodes/<nodeID>; without it they carry no link.
	PublicURL string `json:"publicURL,omitempty"`
	// StateDir holds the embedded store and the sources' clones.
	StateDir string `json:"stateDir,omitempty"`
	// History, TaintThreshold, AnswerTimeout, StatusMaxBackoff,
	// XDSInsecure, LogFormat, LogLevel, XDSMaxConnections and
	// XDSTransport are the
	// knobs both homes share (core.Tuning, docs/tuning.md), spelled here
	// as the config file spells them; Tuning maps them onto core.Tuning.
	//
	// History bounds each node's revision history (default 10).
	History int `json:"history,omitempty"`
	// TaintThreshold is the share of a node's proxies that must reject a
	// revision to taint it, in (0, 1] (default 1).
	TaintThreshold float64 `json:"taintThreshold,omitempty"`
	// AnswerTimeout is how long to wait for every proxy's answer before a
	// revision is judged on the answers at hand (default 30s).
	AnswerTimeout Duration `json:"answerTimeout,omitempty"`
	// StatusMaxBackoff caps the wait between two attempts to deliver a
	// commit status while the forge fails (default 30s, at most 5m).
	StatusMaxBackoff Duration `json:"statusMaxBackoff,omitempty"`
	// LogFormat is text or json (default text); LogLevel the least
	// severe level logged: debug, info, warn or error (default info).
	LogFormat string `json:"logFormat,omitempty"`
	LogLevel  string `json:"logLevel,omitempty"`
	// XDSMaxConnections bounds the client connections the xDS listener
	// holds open (default 50000); one more is reset at accept.
	XDSMaxConnections int `json:"xdsMaxConnections,omitempty"`
	// XDSTransport is what carries xDS: lean (legate's own HTTP/2
	// transport, the default) or grpc (grpc-go's server).
	XDSTransport string `json:"xdsTransport,omitempty"`
	// AdminTokenFile holds the bearer token every mutating API call
	// (fetch triggers, clearing taints) must carry. Without it legate
	// makes one on its first start in <StateDir>/admin-token.
	AdminTokenFile string `json:"adminTokenFile,omitempty"`
	// ReadTokenFile, when set, holds a token every read (status page, API,
	// metrics) must carry as a bearer token or a basic-auth password; the
	// admin token is accepted too. /healthz, /readyz and /livez stay open.
	ReadTokenFile string `json:"readTokenFile,omitempty"`
	// Webhooks holds the shared secrets of the push webhooks; a provider
	// without a secret answers 401 to every delivery.
	Webhooks WebhookConfig `json:"webhooks,omitempty"`
	// SecretsDir holds the key material of the external secrets
	// configurations refer to, one directory per source: secret ref NAME of
	// source S is the directory <SecretsDir>/S/NAME holding files named
	// like the keys of a Kubernetes Secret (tls.crt, tls.key, ca.crt, an
	// opaque key). A source reaches other directories only through its
	// Secrets grants.
	SecretsDir string `json:"secretsDir,omitempty"`
	// SecretsInterval is how often SecretsDir is checked for changed files
	// (default 5s).
	SecretsInterval Duration `json:"secretsInterval,omitempty"`
}

// WebhookConfig names where each provider's webhook secret is read from.
type WebhookConfig struct {
	// Gitea (and Forgejo): the webhook's secret (HMAC-SHA256 signature).
	Gitea sources.Secret `json:"gitea,omitempty"`
	// GitHub: the webhook's secret (X-Hub-Signature-256).
	GitHub sources.Secret `json:"github,omitempty"`
	// GitLab: the webhook's secret token (X-Gitlab-Token).
	GitLab sources.Secret `json:"gitlab,omitempty"`
	// Generic: the key of the X-Legate-Signature-256 HMAC.
	Generic sources.Secret `json:"generic,omitempty"`
}

// SourceConfig is one source: exactly one of Git and OCI.
type SourceConfig struct {
	// Name identifies the source in statuses, metrics and the API.
	Name string `json:"name"`
	// Git follows a Git repository.
	Git *GitSource `json:"git,omitempty"`
	// OCI follows an OCI artifact.
	OCI *OCISource `json:"oci,omitempty"`
	// Interval is the poll interval (default 1m); push webhooks trigger a
	// fetch at once in between.
	Interval Duration `json:"interval,omitempty"`
	// Path is the directory inside the repository or artifact; the same as
	// git.path or oci.path.
	Path string `json:"path,omitempty"`
	// Forge, when set, posts a commit status per node on every commit this
	// source delivers.
	Forge *ForgeConfig `json:"forge,omitempty"`
	// Previews, when enabled, previews the pull requests whose target is
	// this source's branch (a git source with a forge): see
	// docs/previews.md.
	Previews *PreviewsConfig `json:"previews,omitempty"`
	// Secrets grants the source external secrets outside its own
	// directory: refs (or path.Match patterns such as "shared/*") relative
	// to secretsDir. Without a grant, a ref NAME resolves to
	// <secretsDir>/<source name>/NAME and a ref NAMESPACE/NAME is allowed
	// only when NAMESPACE is the source's name.
	Secrets []string `json:"secrets,omitempty"`
	// Rollout, when set, rolls each new revision of the source's nodes out
	// progressively (steps of proxies, nodes and pauses, with gates); see
	// docs/rollout.md. Without it a new revision reaches every proxy at
	// once.
	Rollout *rollout.Policy `json:"rollout,omitempty"`
}

// GitSource is a Git repository to follow.
type GitSource struct {
	// URL is a local path, file://, http(s)://, ssh:// or scp-like
	// (git@host:org/repo) address.
	URL string `json:"url"`
	// Branch is a short form of ref.branch.
	Branch string `json:"branch,omitempty"`
	// Ref selects what to follow, with Flux's precedence: commit > name >
	// semver > tag > branch. Empty follows the remote's default branch.
	Ref *gitsource.Ref `json:"ref,omitempty"`
	// Path is the directory inside the repository.
	Path string `json:"path,omitempty"`
	// Auth holds the credentials; none is anonymous.
	Auth *GitAuth `json:"auth,omitempty"`
	// Timeout bounds one fetch (default 60s).
	Timeout Duration `json:"timeout,omitempty"`
	// Depth > 0 keeps a shallow clone of that many commits.
	Depth int `json:"depth,omitempty"`
}

// GitAuth are the credentials of a Git source; every secret is read from a
// file or an environment variable, never written in the config.
type GitAuth struct {
	// Username for HTTPS basic auth (default "git") or SSH.
	Username string `json:"username,omitempty"`
	// Password is the HTTPS basic password or access token.
	Password sources.Secret `json:"password,omitempty"`
	// BearerToken is sent as "Authorization: Bearer <token>".
	BearerToken sources.Secret `json:"bearerToken,omitempty"`
	// SSHKey is a PEM private key for ssh URLs, SSHKeyPassphrase its
	// passphrase.
	SSHKey           sources.Secret `json:"sshKey,omitempty"`
	SSHKeyPassphrase sources.Secret `json:"sshKeyPassphrase,omitempty"`
	// KnownHosts is the known_hosts file holding the server's host key;
	// required for ssh.
	KnownHosts string `json:"knownHosts,omitempty"`
}

// OCISource is an OCI artifact to follow (Flux's format, or a single tar
// layer).
type OCISource struct {
	// URL is oci://<registry>/<repository>.
	URL string `json:"url"`
	// Tag, SemVer (a range over the tags) or Digest select the artifact;
	// Digest wins over SemVer, SemVer over Tag; the default is "latest".
	Tag    string `json:"tag,omitempty"`
	SemVer string `json:"semver,omitempty"`
	Digest string `json:"digest,omitempty"`
	// Path is the directory inside the artifact.
	Path string `json:"path,omitempty"`
	// DockerConfig is a Docker config.json whose "auths" hold the registry
	// credentials.
	DockerConfig string `json:"dockerConfig,omitempty"`
	// Insecure talks plain HTTP to the registry.
	Insecure bool `json:"insecure,omitempty"`
	// Timeout bounds one fetch (default 60s).
	Timeout Duration `json:"timeout,omitempty"`
}

// ForgeConfig says where the commit statuses of a source go.
type ForgeConfig struct {
	// Provider is gitea, github or gitlab.
	Provider forge.Provider `json:"provider"`
	// BaseURL is the forge's address: Gitea's or GitLab's root URL, GitHub's
	// API URL (empty for api.github.com). For gitea and gitlab it defaults to
	// the scheme and host of the source's http(s) URL.
	BaseURL string `json:"baseURL,omitempty"`
	// Repository is "owner/name" (GitLab: the project path or ID); it
	// defaults to the path of the source's URL.
	Repository string `json:"repository,omitempty"`
	// Token may write commit statuses.
	Token sources.Secret `json:"token"`
}

// PreviewsConfig turns on pull-request previews for a source.
type PreviewsConfig struct {
	// Enabled previews every pull request into the source's branch that
	// a webhook announces.
	Enabled bool `json:"enabled,omitempty"`
	// Concurrency is how many of the source's previews render at once
	// (default 2); the others wait, each request keeping only its newest
	// head.
	Concurrency int `json:"concurrency,omitempty"`
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

// LoadConfig reads a YAML config file. Unknown fields are errors, and an
// error names the file, line, column and field, e.g.
// "legate.yaml:5:13: sources[0].interval: duration "soon": …".
func LoadConfig(path string) (Config, error) {
	var cfg Config
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("read config: %w", err)
	}
	if line, col, msg, bad := render.YAMLSyntaxError(data); bad {
		return cfg, fmt.Errorf("%s: %s", render.Position{File: path, Line: line, Column: col}, msg)
	}
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		if field, ferr := configProblem(data); ferr != nil {
			line, col := render.YAMLFieldPosition(data, field)
			return cfg, fmt.Errorf("%s: %s: %w", render.Position{File: path, Line: line, Column: col}, field, ferr)
		}
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// configProblem finds the first field of a config file that does not
// decode, walking the document alongside the Config type, so that the
// error can name the field and its place rather than "error unmarshaling
// JSON".
func configProblem(data []byte) (string, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return "", err
	}
	var doc any
	if err := json.Unmarshal(js, &doc); err != nil {
		return "", err
	}
	return checkField(doc, reflect.TypeFor[Config](), "")
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

func checkField(v any, t reflect.Type, path string) (string, error) {
	custom := reflect.PointerTo(t).Implements(unmarshalerType) || t.Implements(unmarshalerType)
	switch {
	case custom || v == nil:
	case t.Kind() == reflect.Pointer:
		return checkField(v, t.Elem(), path)
	case t.Kind() == reflect.Struct:
		if m, ok := v.(map[string]any); ok {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				ft, ok := jsonField(t, k)
				if !ok {
					return joinField(path, k), fmt.Errorf("unknown field %q%s", k, render.DidYouMean(k, jsonFieldNames(t)))
				}
				if f, err := checkField(m[k], ft, joinField(path, k)); err != nil {
					return f, err
				}
			}
			return "", nil
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		if l, ok := v.([]any); ok {
			for i, e := range l {
				if f, err := checkField(e, t.Elem(), path+"["+strconv.Itoa(i)+"]"); err != nil {
					return f, err
				}
			}
			return "", nil
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return path, err
	}
	if err := json.Unmarshal(b, reflect.New(t).Interface()); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return path, fmt.Errorf("want %s, found %s", te.Type, te.Value)
		}
		return path, err
	}
	return "", nil
}

// jsonField returns the type of the field of struct t that JSON key k sets.
// jsonFieldNames are the keys a struct of type t takes, for "did you mean".
func jsonFieldNames(t reflect.Type) []string {
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case name == "" && f.Anonymous && f.Type.Kind() == reflect.Struct:
			names = append(names, jsonFieldNames(f.Type)...)
		case name == "":
			names = append(names, f.Name)
		default:
			names = append(names, name)
		}
	}
	return names
}

func jsonField(t reflect.Type, k string) (reflect.Type, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" && f.Anonymous {
			if ft, ok := jsonField(f.Type, k); ok {
				return ft, true
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		if name == k {
			return f.Type, true
		}
	}
	return nil, false
}

func joinField(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// Tuning is the configuration's share of the knobs both homes have.
func (c Config) Tuning() core.Tuning {
	return core.Tuning{
		History:           c.History,
		TaintThreshold:    c.TaintThreshold,
		AnswerTimeout:     c.AnswerTimeout.Duration,
		StatusMaxBackoff:  c.StatusMaxBackoff.Duration,
		XDSInsecure:       c.XDSInsecure,
		LogFormat:         c.LogFormat,
		LogLevel:          c.LogLevel,
		ReadTokenFile:     c.ReadTokenFile,
		XDSMaxConnections: c.XDSMaxConnections,
		XDSTransport:      c.XDSTransport,
	}
}

// SetTuning sets the configuration's knobs to t.
func (c *Config) SetTuning(t core.Tuning) {
	c.History, c.TaintThreshold = t.History, t.TaintThreshold
	c.AnswerTimeout, c.StatusMaxBackoff = Duration{t.AnswerTimeout}, Duration{t.StatusMaxBackoff}
	c.XDSInsecure = t.XDSInsecure
	c.LogFormat, c.LogLevel = t.LogFormat, t.LogLevel
	c.ReadTokenFile = t.ReadTokenFile
	c.XDSMaxConnections = t.XDSMaxConnections
	c.XDSTransport = t.XDSTransport
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.XDSAddr == "" {
		c.XDSAddr = DefaultXDSAddr
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = DefaultHTTPAddr
	}
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir
	}
	if c.SecretsInterval.Duration == 0 {
		c.SecretsInterval.Duration = DefaultSecretsInterval
	}
	c.PublicURL = strings.TrimSuffix(c.PublicURL, "/")
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

// kind is "git" or "oci" ("" when neither is set).
func (s SourceConfig) kind() sources.Kind {
	switch {
	case s.Git != nil:
		return sources.KindGit
	case s.OCI != nil:
		return sources.KindOCI
	}
	return ""
}

// path is the directory inside the repository or artifact.
func (s SourceConfig) path() string {
	switch {
	case s.Git != nil && s.Git.Path != "":
		return s.Git.Path
	case s.OCI != nil && s.OCI.Path != "":
		return s.OCI.Path
	}
	return s.Path
}

// GitRef merges the branch shorthand into the ref.
func (g GitSource) GitRef() gitsource.Ref {
	var r gitsource.Ref
	if g.Ref != nil {
		r = *g.Ref
	}
	if r.Branch == "" {
		r.Branch = g.Branch
	}
	return r
}
