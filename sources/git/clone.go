package git

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"

	gogit "github.com/go-git/go-git/v5"

	"github.com/legate-dev/legate/netguard"
	"github.com/legate-dev/legate/sources"
)

// clone is the persistent bare clone of one repository. The sources that
// share it (Config.Clones) use it one at a time.
type clone struct {
	dir string
	// shared is set for a clone of a Clones registry: a fetch then waits
	// for its turn (up to its timeout) instead of failing at once.
	shared bool
	// turn is held by the fetch using the clone: a one-slot semaphore,
	// so that a wait for it can end with the waiter's context.
	turn chan struct{}
	// listings counts the listings of the remote's refs begun on this
	// clone; a Fetch reads it when it is called.
	listings atomic.Uint64
	// waiting counts the fetches waiting for the turn.
	waiting atomic.Int32

	// The fields below are used with the turn held.
	repo  *gogit.Repository // opened once; its object caches survive polls
	quota quota             // bounds what a fetch may write (see fetchRef)
	// listed is the number (in listings) of the last listing that
	// succeeded, adv what it advertised.
	listed uint64
	adv    advertised
}

func newClone(dir string, shared bool) *clone {
	return &clone{dir: dir, shared: shared, turn: make(chan struct{}, 1)}
}

// take waits for the clone's turn: not at all for a clone of its own (the
// holder is a fetch of the same source still stalled past its timeout),
// until ctx ends for a shared one.
func (c *clone) take(ctx context.Context) bool {
	select {
	case c.turn <- struct{}{}:
		return true
	default:
	}
	if !c.shared {
		return false
	}
	c.waiting.Add(1)
	defer c.waiting.Add(-1)
	select {
	case c.turn <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// give hands the turn back.
func (c *clone) give() { <-c.turn }

// resolveListed resolves ref against the clone's last listing when that
// listing began after the caller asked (asked is listings when it did),
// and reports whether that answers the fetch: the listing is that recent
// and the commit it names is in the clone already. Anything else (an older
// listing, a ref it does not resolve, a commit still to fetch) is left to
// a listing of the caller's own.
func (c *clone) resolveListed(ref Ref, asked uint64, repo *gogit.Repository) (target, bool) {
	if c.adv == nil || c.listed <= asked {
		return target{}, false
	}
	tgt, err := resolve(ref, c.adv)
	if err != nil || tgt.commit == "" || !hasCommit(repo, tgt.commit) {
		return target{}, false
	}
	return tgt, true
}

// Clones lets the sources that fetch one repository alike share one
// persistent clone (see Config.Clones). The zero value is not usable: make
// one with NewClones. It is safe for concurrent use.
type Clones struct {
	mu sync.Mutex
	m  map[string][]sharedClone // by key, one a guard
}

// sharedClone is a clone of a registry with the guard of the sources that
// share it: a source with another guard (or none) never reads what a
// differently guarded fetch brought in.
type sharedClone struct {
	c     *clone
	guard *netguard.Guard
}

// NewClones returns an empty registry of shared clones. Only the sources
// of one tenant may share a registry: legate serve keeps one for its
// sources; the Kubernetes home keeps none (an EnvoySource's driver is
// rebuilt when its spec or Secret changes, and a clone shared by drivers
// would need its removal tied to theirs).
func NewClones() *Clones { return &Clones{m: map[string][]sharedClone{}} }

// of returns the clone for a source of cfg fetching endpoint: a shared one
// when cfg.Clones is set (the same for every source with the same state
// directory, URL, credentials, depth, size limit and guard), else one of
// its own named after the source.
func (cs *Clones) of(cfg Config, endpoint string, user *url.Userinfo) *clone {
	if cs == nil {
		sum := sha256.Sum256([]byte(endpoint))
		return newClone(filepath.Join(cfg.StateDir, "git", safeName(cfg.Name)+"-"+hex.EncodeToString(sum[:6])), false)
	}
	key := cloneKey(cfg, endpoint, user)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, e := range cs.m[key] {
		if e.guard == cfg.Guard {
			return e.c
		}
	}
	// The same repository and credentials under another guard (a home
	// has one, so in practice never) get a clone apart, numbered.
	name := key
	if n := len(cs.m[key]); n > 0 {
		name = fmt.Sprintf("%s\x00guard %d", key, n)
	}
	sum := sha256.Sum256([]byte(name))
	c := newClone(filepath.Join(cfg.StateDir, "git", "shared-"+hex.EncodeToString(sum[:8])), true)
	cs.m[key] = append(cs.m[key], sharedClone{c: c, guard: cfg.Guard})
	return c
}

// cloneKey identifies what a clone holds and how it may be fetched: two
// sources share a clone only when every part is equal. Credentials count by
// where they are read from (a file, a variable) or, for a value already
// read, by its hash; the key itself is never shown.
func cloneKey(cfg Config, endpoint string, user *url.Userinfo) string {
	h := sha256.New()
	field := func(name, v string) { fmt.Fprintf(h, "%s %d %s\n", name, len(v), v) }
	secret := func(name string, s sources.Secret) {
		field(name+".file", s.File)
		field(name+".env", s.Env)
		v := sha256.Sum256([]byte(s.Value))
		field(name+".value", hex.EncodeToString(v[:]))
	}
	field("state", filepath.Clean(cfg.StateDir))
	field("url", endpoint)
	if user != nil {
		v := sha256.Sum256([]byte(user.String()))
		field("userinfo", hex.EncodeToString(v[:]))
	}
	field("username", cfg.Auth.Username)
	secret("password", cfg.Auth.Password)
	secret("bearer", cfg.Auth.BearerToken)
	secret("sshkey", cfg.Auth.SSHKey)
	secret("sshpass", cfg.Auth.SSHKeyPassphrase)
	field("knownhosts", cfg.Auth.KnownHosts)
	field("depth", fmt.Sprint(cfg.Depth))
	field("maxrepo", fmt.Sprint(cfg.MaxRepoSize))
	return hex.EncodeToString(h.Sum(nil))
}
