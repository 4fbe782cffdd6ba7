package git

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/legate-dev/legate/sources"
)

// Local is a repository on this machine read at any revision without
// touching its work tree or index: `legate diff --base --head` renders two
// commits of the repository a CI job checked out.
type Local struct {
	repo *gogit.Repository
	// Path is the directory inside the repository that was asked for,
	// slash-separated, "." for the root.
	Path string
}

// OpenLocal opens the repository that holds dir (dir or one of its
// parents has the .git directory); the config path read later is dir's
// place inside it.
func OpenLocal(dir string) (*Local, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("repository at %s: %w", dir, err)
	}
	repo, err := gogit.PlainOpenWithOptions(abs, &gogit.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return nil, fmt.Errorf("repository at %s: %w", dir, err)
	}
	rel := "."
	if wt, err := repo.Worktree(); err == nil {
		root, err := filepath.EvalSymlinks(wt.Filesystem.Root())
		if err != nil {
			return nil, fmt.Errorf("repository at %s: %w", dir, err)
		}
		target, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, fmt.Errorf("repository at %s: %w", dir, err)
		}
		if rel, err = filepath.Rel(root, target); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil, fmt.Errorf("repository at %s: %s is not inside its work tree %s", dir, target, root)
		}
		rel = filepath.ToSlash(rel)
	}
	return &Local{repo: repo, Path: rel}, nil
}

// Read reads the configuration path at rev (a branch, a tag, a commit
// SHA, or an expression such as HEAD~1 or origin/main) as a source
// checks a commit out: only the files the renderer reads, within the
// default checkout limits and a budget of its own. The snapshot's Origin
// names the commit.
func (l *Local) Read(rev string) (*sources.Snapshot, error) {
	hash, err := l.repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		if errors.Is(err, plumbing.ErrReferenceNotFound) {
			return nil, fmt.Errorf("revision %q: no such branch, tag or commit", rev)
		}
		return nil, fmt.Errorf("revision %q: %w", rev, err)
	}
	commit, err := l.repo.CommitObject(*hash)
	if err != nil {
		return nil, fmt.Errorf("revision %q: commit %s: %w", rev, hash, err)
	}
	root, err := commit.Tree()
	if err != nil {
		return nil, fmt.Errorf("read tree of commit %s: %w", commit.Hash, err)
	}
	charge := sources.NewBudget(0, 0).Fetch(rev)
	defer charge.Drop()
	co := checkout{path: l.Path, maxFiles: DefaultMaxFiles, maxSize: DefaultMaxCheckoutSize, charge: charge}
	fsys, _, _, err := co.read(commit.Hash, root)
	if err != nil {
		return nil, err
	}
	return &sources.Snapshot{Files: fsys, Origin: sources.Origin{
		Kind:    sources.KindGit,
		Ref:     rev,
		Path:    l.Path,
		Commit:  commit.Hash.String(),
		Author:  fmt.Sprintf("%s <%s>", commit.Author.Name, commit.Author.Email),
		Message: strings.TrimSpace(commit.Message),
	}}, nil
}
