package git

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	gogit "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/legate-dev/legate/sources"
)

const remoteName = "origin"

// Source is a Git source. It implements sources.Source; Fetch calls are
// serialised by the clone it fetches into.
type Source struct {
	cfg Config
	// sshAdvLimit is sshAdvertisementLimit, read once when the source is
	// made (a test lowers it; nothing reads the variable while fetches run).
	sshAdvLimit int64
	endpoint    string // URL handed to go-git, without user info
	display     string // URL shown in Origin and errors, without user info
	urlUser     *url.Userinfo
	path        string
	// c is the persistent clone: the source's own, or one it shares
	// (Config.Clones); release gives a shared one back (Close).
	c       *clone
	release func()
	// local is set for a repository on this machine (file transport),
	// ssh for an SSH remote.
	local, ssh bool

	// The fields below are the source's own; they are used with the
	// clone's turn held.
	lastContent string
	last        *sources.Result          // the previous snapshot, reused when the commit did not move
	lastBlobs   map[plumbing.Hash][]byte // its file contents by blob hash, reused for unchanged files
	lastSizes   map[plumbing.Hash]int64  // the sizes of all its files by blob hash, kept or not
}

// New validates cfg, applies defaults and prepares the source. It does not
// touch the network; the clone is created or opened by the first Fetch.
func New(cfg Config) (*Source, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	endpoint, user, err := remoteURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("git source %q: %w", cfg.Name, err)
	}
	p, err := sources.CleanPath(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("git source %q: %w", cfg.Name, err)
	}
	ep, err := transport.NewEndpoint(endpoint)
	if err != nil {
		return nil, fmt.Errorf("git source %q: %w", cfg.Name, err)
	}
	if err := checkGuarded(cfg, ep); err != nil {
		return nil, fmt.Errorf("git source %q: %w", cfg.Name, err)
	}
	src := &Source{
		sshAdvLimit: sshAdvertisementLimit,
		local:       ep.Protocol == "file",
		ssh:         ep.Protocol == "ssh",
		cfg:         cfg,
		endpoint:    endpoint,
		display:     sources.Redact(endpoint),
		urlUser:     user,
		path:        p,
	}
	src.c, src.release = cfg.Clones.of(cfg, endpoint, user)
	return src, nil
}

// Close gives the source's shared clone back: the clone is removed when its
// last source is closed, once the fetch using it ends. A source with a
// clone of its own keeps it on disk (the next source of the same name
// reuses it). A closed source must not fetch again.
func (s *Source) Close() error {
	if s.release != nil {
		s.release()
	}
	return nil
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func safeName(name string) string {
	s := strings.Trim(unsafeChars.ReplaceAllString(name, "_"), "._")
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		s = "source"
	}
	return s
}

// Name implements sources.Source.
func (s *Source) Name() string { return s.cfg.Name }

// URL is the repository URL without credentials.
func (s *Source) URL() string { return s.display }

// Dir is the directory of the persistent clone.
func (s *Source) Dir() string { return s.c.dir }

// Fetch implements sources.Source: it lists the remote's refs, fetches the
// followed ref only when its commit is not already in the local clone, and
// returns the configured path at the resolved commit. A source sharing its
// clone lists nothing when another source's listing began after this Fetch
// was called and the commit it names is in the clone already: one listing
// and one fetch serve every source of a repository that a push triggers.
func (s *Source) Fetch(ctx context.Context) (*sources.Result, error) {
	asked := s.c.listings.Load()
	// go-git bounds neither the SSH handshake nor every read by the
	// context: a server that accepts the connection and never answers
	// would block the fetch for good. The fetch runs in its own goroutine
	// and Fetch returns when the timeout passes; a fetch still stalled then
	// keeps the clone's turn, so later calls fail (at once, or at their
	// timeout when the clone is shared) instead of piling up behind it.
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	if !s.c.take(ctx) {
		cancel()
		if s.c.shared {
			return nil, fmt.Errorf("git source %q (%s): the clone it shares with the other sources of this repository stayed busy for the whole fetch timeout of %s; nothing fetched", s.cfg.Name, s.display, s.cfg.Timeout)
		}
		return nil, fmt.Errorf("git source %q (%s): an earlier fetch is still waiting on the network past its timeout of %s; nothing fetched", s.cfg.Name, s.display, s.cfg.Timeout)
	}
	type result struct {
		res *sources.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := s.fetchLocked(ctx, asked)
		cancel()
		// Give the turn back before answering, so that a Fetch right
		// after this one returned never finds the clone still taken.
		s.c.give()
		done <- result{res, err}
	}()
	select {
	case r := <-done:
		return r.res, r.err
	case <-ctx.Done():
		// Give go-git a moment to return the context's error itself.
		select {
		case r := <-done:
			return r.res, r.err
		case <-time.After(stallGrace):
		}
		return nil, fmt.Errorf("git source %q (%s): the server did not answer within the fetch timeout of %s: %w", s.cfg.Name, s.display, s.cfg.Timeout, ctx.Err())
	}
}

// stallGrace is how long Fetch waits, after the timeout, for a fetch to
// end by itself before it reports the server as stalled.
const stallGrace = time.Second

// fetchLocked is Fetch with the clone's turn held; asked is the count of
// the clone's listings when Fetch was called.
func (s *Source) fetchLocked(ctx context.Context, asked uint64) (*sources.Result, error) {
	creds, err := readCredentials(s.cfg.Auth, s.endpoint, s.urlUser)
	if err != nil {
		return nil, s.wrap(creds, fmt.Errorf("git source %q: %w", s.cfg.Name, err))
	}
	res, err := s.fetch(ctx, creds, asked)
	if err != nil {
		return nil, s.wrap(creds, fmt.Errorf("git source %q (%s): %w", s.cfg.Name, s.display, err))
	}
	res.Changed = res.Content != s.lastContent
	s.lastContent = res.Content
	return res, nil
}

func (s *Source) fetch(ctx context.Context, creds credentials, asked uint64) (*sources.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	repo, err := s.open()
	if err != nil {
		return nil, err
	}
	tgt, fresh := s.c.resolveListed(s.cfg.Ref, asked, repo)
	if !fresh {
		if tgt, err = s.list(ctx, repo, creds); err != nil {
			return nil, err
		}
	}
	commit, err := s.commitFor(repo, tgt)
	if err != nil {
		return nil, err
	}
	if s.last != nil && s.last.Origin.Commit == commit.Hash.String() && s.last.Origin.Ref == tgt.display {
		prev := *s.last
		return &prev, nil
	}
	res, blobs, sizes, err := s.snapshot(commit, tgt)
	if err != nil {
		return nil, err
	}
	s.last, s.lastBlobs, s.lastSizes = res, blobs, sizes
	copied := *res
	return &copied, nil
}

// list lists the remote's refs, records the listing in the clone for the
// sources sharing it, and fetches the followed ref's commit when the clone
// does not hold it yet.
func (s *Source) list(ctx context.Context, repo *gogit.Repository, creds credentials) (target, error) {
	ctx, sess, meter, err := s.session(ctx, creds)
	if err != nil {
		return target{}, fmt.Errorf("open a session with the remote: %w", err)
	}
	defer sess.Close() //nolint:errcheck // nothing is written through it after the pack was read
	n := s.c.listings.Add(1)
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if over := meter.err(); over != nil {
		// go-git reports the cut connection as its own (an EOF, a
		// decoding error): say why it was cut.
		return target{}, fmt.Errorf("list remote refs: %w", over)
	}
	if err != nil {
		return target{}, timeoutHint(ctx, fmt.Errorf("list remote refs: %w", err), s.cfg.Timeout)
	}
	meter.lift()
	adv, err := advertisedRefs(ar)
	if err != nil {
		return target{}, fmt.Errorf("list remote refs: %w", err)
	}
	s.c.listed, s.c.adv = n, adv
	tgt, err := resolve(s.cfg.Ref, adv)
	if err != nil {
		return target{}, err
	}
	if tgt.commit == "" || !hasCommit(repo, tgt.commit) {
		if err := s.fetchRef(ctx, repo, sess, ar, tgt, adv); err != nil {
			return target{}, err
		}
	}
	return tgt, nil
}

// open opens the persistent clone, creating it (or re-creating it when the
// URL changed or the directory is damaged).
func (s *Source) open() (*gogit.Repository, error) {
	if s.c.repo != nil {
		return s.c.repo, nil
	}
	repo, err := s.openDir()
	if err != nil {
		return nil, err
	}
	s.c.repo = repo
	return repo, nil
}

func (s *Source) openDir() (*gogit.Repository, error) {
	s.c.quota.set(math.MaxInt64)
	repo, err := gogit.Open(cloneStorage(s.c.dir, &s.c.quota), nil)
	if err == nil {
		if rc, rerr := repo.Remote(remoteName); rerr == nil && len(rc.Config().URLs) == 1 && rc.Config().URLs[0] == s.endpoint {
			return repo, nil
		}
	}
	if err := os.RemoveAll(s.c.dir); err != nil {
		return nil, fmt.Errorf("remove stale clone %s: %w", s.c.dir, err)
	}
	if err := os.MkdirAll(filepath.Dir(s.c.dir), 0o750); err != nil {
		return nil, fmt.Errorf("create state directory: %w", err)
	}
	if err := os.MkdirAll(s.c.dir, 0o750); err != nil {
		return nil, fmt.Errorf("create clone %s: %w", s.c.dir, err)
	}
	repo, err = gogit.Init(cloneStorage(s.c.dir, &s.c.quota), nil) // bare: no worktree
	if err != nil {
		return nil, fmt.Errorf("create clone %s: %w", s.c.dir, err)
	}
	if _, err := repo.CreateRemote(&gitconfig.RemoteConfig{Name: remoteName, URLs: []string{s.endpoint}}); err != nil {
		return nil, fmt.Errorf("configure remote of clone %s: %w", s.c.dir, err)
	}
	return repo, nil
}

// cloneObjectCache bounds go-git's cache of decoded objects per clone. Its
// default (96 MiB) fills with blobs that are read once per commit and kept
// for nothing: the snapshot tree reuses unchanged files itself.
const cloneObjectCache = 8 * cache.MiByte

// clonePacksOpen bounds the pack files of a clone that stay open between
// object reads. go-git otherwise opens and closes a pack for every object it
// reads from it: the commits offered as haves and the trees of every
// snapshot each cost an open, a stat of every path component and a close.
const clonePacksOpen = 8

// cloneStorage is the on-disk storage of a bare clone with a small object
// cache and a few packs kept open, its writes counted against q. The open
// packs are closed by clone.close, or by the os.File finalizers once a
// dropped Source is collected.
func cloneStorage(dir string, q *quota) *filesystem.Storage {
	return filesystem.NewStorageWithOptions(quotaFS{Filesystem: osfs.New(dir), q: q}, cache.NewObjectLRU(cloneObjectCache),
		filesystem.Options{MaxOpenDescriptors: clonePacksOpen})
}

func hasCommit(repo *gogit.Repository, sha string) bool {
	_, err := repo.CommitObject(plumbing.NewHash(sha))
	return err == nil
}

// fetchRef fetches the target ref into the same name locally, so that the
// local refs are the "haves" of the next negotiation and only new objects
// travel.
func (s *Source) fetchRef(ctx context.Context, repo *gogit.Repository, sess transport.UploadPackSession, ar *packp.AdvRefs, tgt target, adv advertised) error {
	// What a fetch over the network writes is bounded by the room left
	// under the size limit, so a huge repository is stopped while it
	// arrives rather than measured once it filled the disk. A local
	// repository is on the operator's own disk and is measured after the
	// fetch: go-git's file transport waits for its git-upload-pack process
	// to write everything, so a refused write would wedge it.
	if !s.local {
		before, err := dirSize(s.c.dir)
		if err != nil {
			return fmt.Errorf("measure clone %s: %w", s.c.dir, err)
		}
		s.c.quota.set(s.cfg.MaxRepoSize - before)
		defer s.c.quota.set(math.MaxInt64)
	}
	what := tgt.refName
	if what == "" {
		what = headsPrefix + "*"
	}
	err := s.download(ctx, repo, sess, ar, wanted(tgt, adv))
	if err != nil && (errors.Is(err, errOverQuota) || strings.Contains(err.Error(), errOverQuota.Error())) {
		// The partial pack is of no use: start the clone again next time.
		s.c.close()
		if rerr := os.RemoveAll(s.c.dir); rerr != nil {
			return fmt.Errorf("%w; and removing the partial clone failed: %w", overQuota(s.cfg.MaxRepoSize), rerr)
		}
		return overQuota(s.cfg.MaxRepoSize)
	}
	if err != nil {
		return timeoutHint(ctx, fmt.Errorf("fetch %s: %w", what, err), s.cfg.Timeout)
	}
	// Merging packs rewrites what was fetched already: the quota bounds
	// what arrives, the size check below what stays.
	s.c.quota.set(math.MaxInt64)
	if st, ok := repo.Storer.(*filesystem.Storage); ok {
		if err := s.compact(st); err != nil {
			return fmt.Errorf("merge the packs of clone %s: %w", s.c.dir, err)
		}
	}
	size, err := dirSize(s.c.dir)
	if err != nil {
		return fmt.Errorf("measure clone %s: %w", s.c.dir, err)
	}
	if size > s.cfg.MaxRepoSize {
		return fmt.Errorf("the local clone is %s, over the repository size limit of %s: raise the limit, or use a shallow depth", mib(size), mib(s.cfg.MaxRepoSize))
	}
	return nil
}

func (s *Source) commitFor(repo *gogit.Repository, tgt target) (*object.Commit, error) {
	sha := tgt.commit
	if sha == "" {
		ref, err := repo.Reference(plumbing.ReferenceName(tgt.refName), true)
		if err != nil {
			return nil, fmt.Errorf("read fetched ref %s: %w", tgt.refName, err)
		}
		sha = ref.Hash().String()
	}
	h := plumbing.NewHash(sha)
	if tag, err := repo.TagObject(h); err == nil {
		c, err := tag.Commit()
		if err != nil {
			return nil, fmt.Errorf("tag %s does not point at a commit: %w", tgt.display, err)
		}
		return c, nil
	}
	c, err := repo.CommitObject(h)
	if err != nil {
		if s.cfg.Ref.Commit != "" {
			return nil, fmt.Errorf("commit %s is not on %s in the remote repository", sha, tgt.display)
		}
		return nil, fmt.Errorf("read commit %s: %w", sha, err)
	}
	return c, nil
}

func dirSize(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += info.Size()
		}
		return nil
	})
	return total, err
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func timeoutHint(ctx context.Context, err error, d interface{ String() string }) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w (the fetch timeout of %s passed)", err, d)
	}
	return err
}

var _ sources.Source = (*Source)(nil)
