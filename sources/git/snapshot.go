package git

import (
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	gogit "github.com/go-git/go-git/v5"
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
func (s *Source) snapshot(commit *object.Commit, tgt target) (*sources.Result, map[plumbing.Hash][]byte, map[plumbing.Hash]int64, error) {
	root, err := commit.Tree()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read tree of commit %s: %w", commit.Hash, err)
	}
	charge := s.cfg.Budget.Fetch(s.cfg.Name)
	defer charge.Drop()
	co := checkout{
		path: s.path, maxFiles: s.cfg.MaxFiles, maxSize: s.cfg.MaxCheckoutSize, charge: charge,
		repo: s.c.repo, reuse: s.lastBlobs, sizes: s.lastSizes,
	}
	fsys, blobs, sizes, tree, err := co.read(commit.Hash, root)
	if err != nil {
		return nil, nil, nil, err
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
	}, blobs, sizes, nil
}

// checkout is how a commit's tree is read: the files under path that the
// renderer reads (sources.Kept), within the checkout limits (every file
// under path counts) and the charge of the budget.
type checkout struct {
	path     string // "." for the root
	maxFiles int
	maxSize  int64
	charge   *sources.Charge
	repo     *gogit.Repository
	// reuse holds the contents of blobs read before, by hash, and sizes
	// the sizes of every file seen before: a file whose blob did not
	// change is not looked up again.
	reuse map[plumbing.Hash][]byte
	sizes map[plumbing.Hash]int64
}

// read reads the tree under co.path of root, commit's tree, and returns
// it with the blobs it read and the sizes of every file by hash, and the
// tree under path.
func (co checkout) read(commit plumbing.Hash, root *object.Tree) (*sources.Tree, map[plumbing.Hash][]byte, map[plumbing.Hash]int64, *object.Tree, error) {
	tree := root
	if co.path != "." {
		var err error
		tree, err = root.Tree(co.path)
		if errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) {
			return nil, nil, nil, nil, fmt.Errorf("path %q does not exist at commit %s", co.path, commit)
		}
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("read path %q at commit %s: %w", co.path, commit, err)
		}
	}
	files := map[string][]byte{}
	blobs := map[plumbing.Hash][]byte{}
	sizes := make(map[plumbing.Hash]int64, len(co.sizes))
	var total int64
	// A tree walk yields each file's hash without reading its blob, so an
	// unchanged file costs a map lookup: its size and, when the renderer
	// reads it, its content come from the previous snapshot. Only blobs
	// new since then are looked up in the pack (tree.Files would decode
	// every blob of the path on every commit).
	walker := object.NewTreeWalker(tree, true, nil)
	defer walker.Close()
	for {
		name, entry, err := walker.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("read path %q at commit %s: %w", co.path, commit, err)
		}
		switch entry.Mode {
		case filemode.Dir, filemode.Submodule:
			continue
		case filemode.Symlink:
			return nil, nil, nil, nil, fmt.Errorf("%s is a symbolic link: links are not followed in a config path, commit the file itself", co.repoPath(name))
		}
		if len(files) >= co.maxFiles {
			return nil, nil, nil, nil, fmt.Errorf("path %q at commit %s has more than %d files, the checkout limit: raise it or point the source at a smaller directory", co.path, commit, co.maxFiles)
		}
		kept := sources.Kept(name)
		data, known := co.reuse[entry.Hash]
		size, sized := co.sizes[entry.Hash]
		var blob *object.Blob
		switch {
		case sized:
		case kept && !known:
			// Read below anyway: its header gives the size.
			if blob, err = co.repo.BlobObject(entry.Hash); err != nil {
				return nil, nil, nil, nil, fmt.Errorf("read %s at commit %s: %w", co.repoPath(name), commit, err)
			}
			size = blob.Size
		default:
			if size, err = co.repo.Storer.EncodedObjectSize(entry.Hash); err != nil {
				return nil, nil, nil, nil, fmt.Errorf("read %s at commit %s: %w", co.repoPath(name), commit, err)
			}
		}
		sizes[entry.Hash] = size
		total += size
		if total > co.maxSize {
			return nil, nil, nil, nil, fmt.Errorf("files under path %q at commit %s exceed the checkout size limit of %s: raise it or point the source at a smaller directory", co.path, commit, mib(co.maxSize))
		}
		if !kept {
			continue
		}
		if err := co.charge.Add(co.repoPath(name), size); err != nil {
			return nil, nil, nil, nil, fmt.Errorf("commit %s: %w", commit, err)
		}
		if !known {
			if data, err = co.readBlob(blob, entry.Hash); err != nil {
				return nil, nil, nil, nil, fmt.Errorf("read %s at commit %s: %w", co.repoPath(name), commit, err)
			}
		}
		files[name] = data
		blobs[entry.Hash] = data
	}
	fsys, err := sources.NewTree(files)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("path %q at commit %s: %w", co.path, commit, err)
	}
	return fsys, blobs, sizes, tree, nil
}

func (co checkout) repoPath(name string) string {
	if co.path == "." {
		return name
	}
	return path.Join(co.path, name)
}

// readBlob reads blob b (h, looked up when b is nil).
func (co checkout) readBlob(b *object.Blob, h plumbing.Hash) ([]byte, error) {
	if b == nil {
		var err error
		if b, err = co.repo.BlobObject(h); err != nil {
			return nil, err
		}
	}
	r, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, b.Size+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != b.Size {
		return nil, fmt.Errorf("blob %s is %d bytes, the object header says %d", h, len(data), b.Size)
	}
	return data, nil
}
