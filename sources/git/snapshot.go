package git

import (
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/legate-dev/legate/sources"
)

// snapshot reads the files of the configured path at commit that the
// renderer reads (sources.Kept) into memory, within the checkout limits
// and the budget, and describes where they came from. Other files are
// counted by the checkout limits but never read.
// Contents of files whose blob did not change since the previous snapshot
// are taken from it instead of being decoded again.
func (s *Source) snapshot(commit *object.Commit, tgt target) (*sources.Result, map[plumbing.Hash][]byte, error) {
	root, err := commit.Tree()
	if err != nil {
		return nil, nil, fmt.Errorf("read tree of commit %s: %w", commit.Hash, err)
	}
	charge := s.cfg.Budget.Fetch(s.cfg.Name)
	defer charge.Drop()
	co := checkout{path: s.path, maxFiles: s.cfg.MaxFiles, maxSize: s.cfg.MaxCheckoutSize, charge: charge, reuse: s.lastBlobs}
	fsys, blobs, tree, err := co.read(commit.Hash, root)
	if err != nil {
		return nil, nil, err
	}
	origin := sources.Origin{
		Kind:    sources.KindGit,
		Source:  s.cfg.Name,
		URL:     s.display,
		Ref:     tgt.display,
		Path:    s.path,
		Commit:  commit.Hash.String(),
		Author:  fmt.Sprintf("%s <%s>", commit.Author.Name, commit.Author.Email),
		Message: strings.TrimSpace(commit.Message),
	}
	charge.Keep() // fetch keeps every snapshot it takes
	return &sources.Result{
		Snapshot: sources.Snapshot{Files: fsys, Origin: origin},
		Content:  "sha1:" + tree.Hash.String(),
	}, blobs, nil
}

// checkout is how a commit's tree is read: the files under path that the
// renderer reads (sources.Kept), within the checkout limits (every file
// under path counts) and the charge of the budget.
type checkout struct {
	path     string // "." for the root
	maxFiles int
	maxSize  int64
	charge   *sources.Charge
	// reuse holds the contents of blobs read before, by hash: a file whose
	// blob did not change is not decoded again.
	reuse map[plumbing.Hash][]byte
}

// read reads the tree under co.path of root, commit's tree, and returns
// it with the blobs it read by hash and the tree under path.
func (co checkout) read(commit plumbing.Hash, root *object.Tree) (*sources.Tree, map[plumbing.Hash][]byte, *object.Tree, error) {
	tree := root
	if co.path != "." {
		var err error
		tree, err = root.Tree(co.path)
		if errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) {
			return nil, nil, nil, fmt.Errorf("path %q does not exist at commit %s", co.path, commit)
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("read path %q at commit %s: %w", co.path, commit, err)
		}
	}
	files := map[string][]byte{}
	blobs := map[plumbing.Hash][]byte{}
	var total int64
	iter := tree.Files()
	defer iter.Close()
	for {
		f, err := iter.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("read path %q at commit %s: %w", co.path, commit, err)
		}
		if f.Mode == filemode.Symlink {
			return nil, nil, nil, fmt.Errorf("%s is a symbolic link: links are not followed in a config path, commit the file itself", co.repoPath(f.Name))
		}
		if len(files) >= co.maxFiles {
			return nil, nil, nil, fmt.Errorf("path %q at commit %s has more than %d files, the checkout limit: raise it or point the source at a smaller directory", co.path, commit, co.maxFiles)
		}
		total += f.Size
		if total > co.maxSize {
			return nil, nil, nil, fmt.Errorf("files under path %q at commit %s exceed the checkout size limit of %s: raise it or point the source at a smaller directory", co.path, commit, mib(co.maxSize))
		}
		if !sources.Kept(f.Name) {
			continue
		}
		if err := co.charge.Add(co.repoPath(f.Name), f.Size); err != nil {
			return nil, nil, nil, fmt.Errorf("commit %s: %w", commit, err)
		}
		data, ok := co.reuse[f.Hash]
		if !ok {
			if data, err = readBlob(f); err != nil {
				return nil, nil, nil, fmt.Errorf("read %s at commit %s: %w", co.repoPath(f.Name), commit, err)
			}
		}
		files[f.Name] = data
		blobs[f.Hash] = data
	}
	fsys, err := sources.NewTree(files)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("path %q at commit %s: %w", co.path, commit, err)
	}
	return fsys, blobs, tree, nil
}

func (co checkout) repoPath(name string) string {
	if co.path == "." {
		return name
	}
	return path.Join(co.path, name)
}

func readBlob(f *object.File) ([]byte, error) {
	r, err := f.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, f.Size+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != f.Size {
		return nil, fmt.Errorf("blob %s is %d bytes, the object header says %d", f.Hash, len(data), f.Size)
	}
	return data, nil
}
