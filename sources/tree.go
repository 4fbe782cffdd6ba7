package sources

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"
)

// Tree is an immutable in-memory file tree. It implements fs.FS,
// fs.ReadFileFS, fs.ReadDirFS and fs.StatFS, holds regular files and the
// directories that contain them, and is safe for concurrent use. Drivers
// build one per fetch so that a Snapshot stays valid whatever the source does
// afterwards.
type Tree struct {
	nodes map[string]*treeNode
}

type treeNode struct {
	name    string // base name; "." for the root
	data    []byte
	dir     bool
	entries []fs.DirEntry
}

// NewTree builds a Tree from slash-separated relative file paths and their
// contents. Every path must be valid in the sense of fs.ValidPath and no path
// may be both a file and a directory.
func NewTree(files map[string][]byte) (*Tree, error) {
	t := &Tree{nodes: map[string]*treeNode{".": {name: ".", dir: true}}}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !fs.ValidPath(name) || name == "." {
			return nil, fmt.Errorf("file path %q is not a clean relative path", name)
		}
		if err := t.addDirs(path.Dir(name)); err != nil {
			return nil, err
		}
		if _, ok := t.nodes[name]; ok {
			return nil, fmt.Errorf("path %q is both a file and a directory", name)
		}
		t.nodes[name] = &treeNode{name: path.Base(name), data: files[name]}
	}
	for p, n := range t.nodes {
		if p == "." {
			continue
		}
		parent := t.nodes[path.Dir(p)]
		parent.entries = append(parent.entries, dirEntry{n})
	}
	for _, n := range t.nodes {
		sort.Slice(n.entries, func(i, j int) bool { return n.entries[i].Name() < n.entries[j].Name() })
	}
	return t, nil
}

func (t *Tree) addDirs(dir string) error {
	for dir != "." {
		n, ok := t.nodes[dir]
		if ok {
			if !n.dir {
				return fmt.Errorf("path %q is both a file and a directory", dir)
			}
			return nil
		}
		t.nodes[dir] = &treeNode{name: path.Base(dir), dir: true}
		dir = path.Dir(dir)
	}
	return nil
}

func (t *Tree) lookup(op, name string) (*treeNode, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	n, ok := t.nodes[name]
	if !ok {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return n, nil
}

// Open implements fs.FS.
func (t *Tree) Open(name string) (fs.File, error) {
	n, err := t.lookup("open", name)
	if err != nil {
		return nil, err
	}
	if n.dir {
		return &openDir{node: n}, nil
	}
	return &openFile{node: n, r: bytes.NewReader(n.data)}, nil
}

// ReadFile implements fs.ReadFileFS. The returned slice is a copy.
func (t *Tree) ReadFile(name string) ([]byte, error) {
	n, err := t.lookup("read", name)
	if err != nil {
		return nil, err
	}
	if n.dir {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("is a directory")}
	}
	return bytes.Clone(n.data), nil
}

// ReadDir implements fs.ReadDirFS.
func (t *Tree) ReadDir(name string) ([]fs.DirEntry, error) {
	n, err := t.lookup("readdir", name)
	if err != nil {
		return nil, err
	}
	if !n.dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fmt.Errorf("not a directory")}
	}
	return append([]fs.DirEntry(nil), n.entries...), nil
}

// Stat implements fs.StatFS.
func (t *Tree) Stat(name string) (fs.FileInfo, error) {
	n, err := t.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	return fileInfo{n}, nil
}

// Paths lists the regular files of the tree in lexical order.
func (t *Tree) Paths() []string {
	var out []string
	for p, n := range t.nodes {
		if !n.dir {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

type fileInfo struct{ n *treeNode }

func (i fileInfo) Name() string       { return i.n.name }
func (i fileInfo) Size() int64        { return int64(len(i.n.data)) }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.n.dir }
func (i fileInfo) Sys() any           { return nil }
func (i fileInfo) Mode() fs.FileMode {
	if i.n.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}

type dirEntry struct{ n *treeNode }

func (d dirEntry) Name() string               { return d.n.name }
func (d dirEntry) IsDir() bool                { return d.n.dir }
func (d dirEntry) Type() fs.FileMode          { return fileInfo(d).Mode().Type() }
func (d dirEntry) Info() (fs.FileInfo, error) { return fileInfo(d), nil }

type openFile struct {
	node *treeNode
	r    *bytes.Reader
}

func (f *openFile) Stat() (fs.FileInfo, error) { return fileInfo{f.node}, nil }
func (f *openFile) Read(p []byte) (int, error) { return f.r.Read(p) }
func (f *openFile) Close() error               { return nil }

func (f *openFile) Seek(offset int64, whence int) (int64, error) {
	return f.r.Seek(offset, whence)
}

func (f *openFile) ReadAt(p []byte, off int64) (int, error) { return f.r.ReadAt(p, off) }

type openDir struct {
	node   *treeNode
	offset int
}

func (d *openDir) Stat() (fs.FileInfo, error) { return fileInfo{d.node}, nil }
func (d *openDir) Close() error               { return nil }

func (d *openDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.node.name, Err: fmt.Errorf("is a directory")}
}

func (d *openDir) ReadDir(count int) ([]fs.DirEntry, error) {
	rest := d.node.entries[d.offset:]
	if count <= 0 {
		d.offset += len(rest)
		return append([]fs.DirEntry(nil), rest...), nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	count = min(count, len(rest))
	d.offset += count
	return append([]fs.DirEntry(nil), rest[:count]...), nil
}

// CleanPath turns a configured path ("./envoy/", "/envoy", "") into the form
// fs.FS uses ("envoy", "."), rejecting paths that leave the root.
func CleanPath(p string) (string, error) {
	c := path.Clean("/" + strings.TrimSpace(p))
	if strings.Contains(p, "\\") {
		return "", fmt.Errorf("path %q must use forward slashes", p)
	}
	c = strings.TrimPrefix(c, "/")
	if c == "" {
		return ".", nil
	}
	return c, nil
}
