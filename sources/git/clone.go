package git

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/storage/filesystem"

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

// close forgets the opened repository, closing its pack files, so that the
// next fetch opens the directory again. It is called with the turn held.
func (c *clone) close() {
	if c.repo == nil {
		return
	}
	if st, ok := c.repo.Storer.(*filesystem.Storage); ok {
		_ = st.Close() // read-only descriptors: nothing to lose
	}
	c.repo = nil
}

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
// persistent clone (see Config.Clones). A clone is removed, directory and
// all, when the last source using it is closed (Source.Close). The zero
// value is not usable: make one with NewClones. It is safe for concurrent
// use.
type Clones struct {
	scope string
	mu    sync.Mutex
	m     map[string]*sharedClone // by clone key
}

// sharedClone is a clone of a registry, the guard of the sources that
// share it (a source with another guard or none never reads what a
// differently guarded fetch brought in), and how many sources use it.
type sharedClone struct {
	c     *clone
	guard *netguard.Guard
	users int
}

// NewClones returns an empty registry of shared clones for the sources of
// scope. Only the sources of one tenant may share a registry: legate serve
// keeps one for its sources, the Kubernetes home one per namespace.
// Registries of different scopes never share a clone, nor its directory.
func NewClones(scope string) *Clones { return &Clones{scope: scope, m: map[string]*sharedClone{}} }

// of returns the clone for a source of cfg fetching endpoint, and what
// gives it back when the source is closed (nil for a clone of its own). It
// is a shared one when cfg.Clones is set (the same for every source with
// the same state directory, URL, credentials, depth, size limit and
// guard), else one of its own named after the source. A source whose
// guard differs from the shared clone's also gets one of its own (a home
// has one guard, so in practice never).
func (cs *Clones) of(cfg Config, endpoint string, user *url.Userinfo) (*clone, func()) {
	own := func() (*clone, func()) {
		sum := sha256.Sum256([]byte(endpoint))
		return newClone(filepath.Join(cfg.StateDir, "git", safeName(cfg.Name)+"-"+hex.EncodeToString(sum[:6])), false), nil
	}
	if cs == nil {
		return own()
	}
	key := cloneKey(cs.scope, cfg, endpoint, user)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	e := cs.m[key]
	switch {
	case e == nil:
		sum := sha256.Sum256([]byte(key))
		e = &sharedClone{c: newClone(filepath.Join(cfg.StateDir, "git", "shared-"+hex.EncodeToString(sum[:8])), true), guard: cfg.Guard}
		cs.m[key] = e
	case e.guard != cfg.Guard:
		return own()
	}
	e.users++
	var once sync.Once
	return e.c, func() { once.Do(func() { cs.release(key, e) }) }
}

// release is a source of e closed: the last one's leaves the clone to be
// removed.
func (cs *Clones) release(key string, e *sharedClone) {
	cs.mu.Lock()
	e.users--
	idle := e.users == 0
	cs.mu.Unlock()
	if idle {
		go cs.remove(key, e)
	}
}

// remove deletes e's clone once the fetch using it (if any) has ended,
// unless a source took it up again meanwhile. The registry stays locked
// until the directory is gone, so that no new clone of the same key (the
// same directory) starts in it.
func (cs *Clones) remove(key string, e *sharedClone) {
	e.c.take(context.Background()) // a shared clone's turn: waits
	defer e.c.give()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if e.users > 0 || cs.m[key] != e {
		return
	}
	delete(cs.m, key)
	e.c.close()
	_ = os.RemoveAll(e.c.dir) // a cache: what is left is overwritten by the next clone of the key
}

// cloneKey identifies what a clone holds and how it may be fetched: two
// sources share a clone only when every part is equal. Credentials count by
// Config.CredentialsID when it is set, else by where they are read from (a
// file, a variable) or, for a value already read, by its hash; the key
// itself is never shown.
func cloneKey(scope string, cfg Config, endpoint string, user *url.Userinfo) string {
	h := sha256.New()
	field := func(name, v string) { fmt.Fprintf(h, "%s %d %s\n", name, len(v), v) }
	field("scope", scope)
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
	if cfg.CredentialsID != "" {
		field("credentials", cfg.CredentialsID)
	} else {
		field("username", cfg.Auth.Username)
		secret("password", cfg.Auth.Password)
		secret("bearer", cfg.Auth.BearerToken)
		secret("sshkey", cfg.Auth.SSHKey)
		secret("sshpass", cfg.Auth.SSHKeyPassphrase)
		field("knownhosts", cfg.Auth.KnownHosts)
	}
	field("depth", fmt.Sprint(cfg.Depth))
	field("maxrepo", fmt.Sprint(cfg.MaxRepoSize))
	return hex.EncodeToString(h.Sum(nil))
}
