package git

import (
	"fmt"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/legate-dev/legate/netguard"
	"github.com/legate-dev/legate/sources"
)

// Defaults applied by New for zero Config fields.
const (
	DefaultTimeout         = 60 * time.Second
	DefaultMaxRepoSize     = 1 << 30  // bytes of the local clone
	DefaultMaxCheckoutSize = 64 << 20 // bytes of files under the path
	DefaultMaxFiles        = 10000
)

// Config configures one Git source.
type Config struct {
	// Name identifies the source (Origin.Source, the clone's directory).
	Name string
	// URL is an https://, http://, ssh://, scp-like (git@host:org/repo),
	// file:// URL or a local path. User info in the URL is used as HTTPS
	// basic credentials and never shown.
	URL string
	// Ref selects what to follow; the zero Ref follows the remote's default
	// branch (HEAD).
	Ref Ref
	// Path is the directory inside the repository that holds the
	// configuration; "" or "." is the root.
	Path string
	// Auth holds credentials; the zero Auth is anonymous.
	Auth Auth
	// CredentialsID, when set, is what the credentials count as when
	// Clones decides which sources may share a clone, instead of Auth
	// itself: the Kubernetes home names the Secret they come from, so that
	// a rotated Secret keeps its clone.
	CredentialsID string
	// StateDir holds the persistent clones (StateDir/git/<name>-<hash>,
	// or StateDir/git/shared-<hash> for a clone of Clones).
	StateDir string
	// Timeout bounds one Fetch (listing refs plus fetching objects).
	Timeout time.Duration
	// Depth, when > 0, fetches at most that many commits of history for the
	// followed ref (a shallow clone). 0 keeps full history, which makes
	// every later fetch send only new objects.
	Depth int
	// MaxRepoSize bounds the size on disk of the local clone in bytes;
	// MaxCheckoutSize bounds the total size of the files under Path;
	// MaxFiles bounds their number.
	MaxRepoSize     int64
	MaxCheckoutSize int64
	MaxFiles        int
	// Budget bounds the files kept in memory (those under Path the
	// renderer reads), alone and with the other sources sharing it
	// (default: a budget of its own with sources.DefaultSourceBytes).
	Budget *sources.Budget
	// Clones, when set, lets this source share its persistent clone with
	// the other sources of the registry that fetch the same URL with the
	// same credentials, depth, size limit, guard and StateDir (a monorepo
	// with one source per directory): the repository is stored once,
	// fetches take turns on it, and one listing and one fetch serve all
	// the sources a push triggers together; Source.Close gives it back.
	// Nil gives the source a clone of its own
	// (StateDir/git/<name>-<hash>).
	Clones *Clones
	// Guard, when set, keeps the fetch from addresses it refuses (checked
	// on every dial, for https, http and ssh alike), follows no redirect
	// to another host, and refuses local repositories; nil fetches from
	// anywhere (legate serve).
	Guard *netguard.Guard
}

// Ref selects a commit the way Flux's GitRepository spec.ref does. When
// several fields are set the first in this order wins: Commit, Name, SemVer,
// Tag, Branch (Branch still limits what is fetched for Commit).
type Ref struct {
	// Branch to follow, e.g. "main".
	Branch string `json:"branch,omitempty"`
	// Tag to follow, e.g. "v1.2.0".
	Tag string `json:"tag,omitempty"`
	// SemVer is a range over the repository's tags, e.g. ">=1.0.0 <2.0.0";
	// the highest matching version wins.
	SemVer string `json:"semver,omitempty"`
	// Name is a full reference name, e.g. "refs/heads/main",
	// "refs/tags/v1.0.0" or "refs/pull/7/head".
	Name string `json:"name,omitempty"`
	// Commit pins a full commit SHA.
	Commit string `json:"commit,omitempty"`
}

// Auth holds the credentials of a Git source. At most one of Password,
// BearerToken and SSHKey is used: Password for HTTPS basic auth (a
// password, or a personal access token with any user name), BearerToken for
// an HTTP Authorization: Bearer header, SSHKey for ssh URLs.
type Auth struct {
	// Username for HTTPS basic auth (default "git") or SSH (default: the
	// user in the URL, else "git").
	Username string
	// Password is the HTTPS basic password or access token.
	Password sources.Secret
	// BearerToken is sent as "Authorization: Bearer <token>".
	BearerToken sources.Secret
	// SSHKey is a PEM-encoded private key; SSHKeyPassphrase decrypts it.
	SSHKey           sources.Secret
	SSHKeyPassphrase sources.Secret
	// KnownHosts is a known_hosts file with the server's host key. Required
	// for ssh; there is no way to skip the host key check.
	KnownHosts string
}

func (c *Config) setDefaults() {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxRepoSize <= 0 {
		c.MaxRepoSize = DefaultMaxRepoSize
	}
	if c.MaxCheckoutSize <= 0 {
		c.MaxCheckoutSize = DefaultMaxCheckoutSize
	}
	if c.MaxFiles <= 0 {
		c.MaxFiles = DefaultMaxFiles
	}
	if c.Budget == nil {
		c.Budget = sources.NewBudget(0, 0)
	}
}

func (c *Config) validate() error {
	if c.Name == "" {
		return fmt.Errorf("git source needs a name")
	}
	if c.URL == "" {
		return fmt.Errorf("git source %q needs a url", c.Name)
	}
	if c.StateDir == "" {
		return fmt.Errorf("git source %q needs a state directory for its clone", c.Name)
	}
	if c.Ref.Commit != "" && !isFullSHA(c.Ref.Commit) {
		return fmt.Errorf("git source %q: commit %q must be a full 40-character SHA-1", c.Name, c.Ref.Commit)
	}
	if c.Ref.SemVer != "" {
		if _, err := semver.NewConstraint(c.Ref.SemVer); err != nil {
			return fmt.Errorf("git source %q: semver range %q: %w", c.Name, c.Ref.SemVer, err)
		}
	}
	if c.Depth < 0 {
		return fmt.Errorf("git source %q: depth must not be negative", c.Name)
	}
	n := 0
	for _, s := range []sources.Secret{c.Auth.Password, c.Auth.BearerToken, c.Auth.SSHKey} {
		if s.IsSet() {
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("git source %q: set only one of password, bearer token and ssh key", c.Name)
	}
	return nil
}

func isFullSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}
