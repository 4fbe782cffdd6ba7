package sources

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
)

// maxLinkHops bounds the symbolic links one path may go through, as the
// kernel's own limit (ELOOP) does.
const maxLinkHops = 40

// Errors of a DirFS path that it will not read.
var (
	ErrLinkOutside = errors.New("a symbolic link on the way leads outside the directory")
	ErrLinkLoop    = errors.New("too many symbolic links on the way")
	ErrNotRegular  = errors.New("not a regular file (a device, a pipe or a socket)")
)

// DirFS is a directory on disk as a source holds a repository: a file is
// read only when every symbolic link on its way, its own and its
// directories', hop after hop, stays inside the directory, and only
// regular files and directories are opened. A checkout of a pull request
// is the author's: a link to a link to /etc or to /dev/zero must neither
// show a file of the machine in a diagnostic nor read forever (os.DirFS
// follows both). The checks and the open are two steps; the directory is
// expected not to change while it is read (a CI checkout), so a race
// between them is not guarded against.
func DirFS(dir string) fs.FS { return dirFS{fsys: os.DirFS(dir)} }

type dirFS struct{ fsys fs.FS }

var (
	_ fs.ReadLinkFS = dirFS{}
	_ fs.StatFS     = dirFS{}
)

// resolve follows the links of name one component at a time and returns
// the path they lead to, which has no link in it. Only the components
// already resolved (real directories) are ever left by "..", so a link's
// target is never cleaned lexically across another link.
func (d dirFS) resolve(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	var real []string
	pending := strings.Split(name, "/")
	hops := 0
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(real) == 0 {
				return "", &fs.PathError{Op: op, Path: name, Err: ErrLinkOutside}
			}
			real = real[:len(real)-1]
			continue
		}
		next := path.Join(append(real, c)...)
		info, err := fs.Lstat(d.fsys, next)
		if err != nil {
			return "", &fs.PathError{Op: op, Path: name, Err: unwrapPath(err)}
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			real = append(real, c)
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", &fs.PathError{Op: op, Path: name, Err: ErrLinkLoop}
		}
		target, err := fs.ReadLink(d.fsys, next)
		if err != nil {
			return "", &fs.PathError{Op: op, Path: name, Err: unwrapPath(err)}
		}
		if path.IsAbs(target) || strings.Contains(target, "\\") {
			return "", &fs.PathError{Op: op, Path: name, Err: ErrLinkOutside}
		}
		// The target is relative to the link's directory, which is real.
		pending = append(strings.Split(target, "/"), pending...)
	}
	if len(real) == 0 {
		return ".", nil
	}
	return path.Join(real...), nil
}

// unwrapPath keeps os.DirFS's own error (fs.ErrNotExist and the like)
// without its path, which names the resolved place, not the asked one.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Open opens name when it resolves inside the directory to a regular file
// or a directory.
func (d dirFS) Open(name string) (fs.File, error) {
	real, err := d.resolve("open", name)
	if err != nil {
		return nil, err
	}
	info, err := fs.Lstat(d.fsys, real)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: unwrapPath(err)}
	}
	if !info.IsDir() && !info.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: ErrNotRegular}
	}
	return d.fsys.Open(real)
}

// Stat describes what name resolves to, as Open would find it.
func (d dirFS) Stat(name string) (fs.FileInfo, error) {
	real, err := d.resolve("stat", name)
	if err != nil {
		return nil, err
	}
	info, err := fs.Lstat(d.fsys, real)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: unwrapPath(err)}
	}
	return info, nil
}

// ReadLink reads the link name itself (its directory resolved inside).
func (d dirFS) ReadLink(name string) (string, error) {
	dir, err := d.resolve("readlink", path.Dir(name))
	if err != nil {
		return "", err
	}
	return fs.ReadLink(d.fsys, path.Join(dir, path.Base(name)))
}

// Lstat describes name without following it when it is a link (its
// directory resolved inside).
func (d dirFS) Lstat(name string) (fs.FileInfo, error) {
	dir, err := d.resolve("lstat", path.Dir(name))
	if err != nil {
		return nil, err
	}
	return fs.Lstat(d.fsys, path.Join(dir, path.Base(name)))
}
