package git

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/go-git/go-billy/v5"
)

// errOverQuota is returned by a write that would take the clone past the
// repository size limit.
var errOverQuota = errors.New("the repository size limit was reached while fetching")

// quota is the number of bytes the clone may still grow by. A negative
// limit means unlimited.
type quota struct {
	left atomic.Int64
}

func (q *quota) set(n int64) { q.left.Store(n) }

// take spends n bytes, failing once the quota is spent.
func (q *quota) take(n int) error {
	if q.left.Add(-int64(n)) < 0 {
		return errOverQuota
	}
	return nil
}

// quotaFS is the clone's file system with every write counted against a
// quota, so that a fetch stops as soon as the received pack would take the
// clone past the size limit, instead of filling the disk first.
type quotaFS struct {
	billy.Filesystem
	q *quota
}

func (f quotaFS) Create(name string) (billy.File, error) {
	return f.wrap(f.Filesystem.Create(name))
}

func (f quotaFS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	return f.wrap(f.Filesystem.OpenFile(name, flag, perm))
}

func (f quotaFS) TempFile(dir, prefix string) (billy.File, error) {
	return f.wrap(f.Filesystem.TempFile(dir, prefix))
}

func (f quotaFS) Chroot(path string) (billy.Filesystem, error) {
	sub, err := f.Filesystem.Chroot(path)
	if err != nil {
		return nil, err
	}
	return quotaFS{Filesystem: sub, q: f.q}, nil
}

func (f quotaFS) wrap(file billy.File, err error) (billy.File, error) {
	if err != nil {
		return nil, err
	}
	return quotaFile{File: file, q: f.q}, nil
}

type quotaFile struct {
	billy.File
	q *quota
}

func (f quotaFile) Write(p []byte) (int, error) {
	if err := f.q.take(len(p)); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

// overQuota is the error of a fetch stopped by the size limit.
func overQuota(limit int64) error {
	return fmt.Errorf("the repository is over the size limit of %s (stopped while receiving it): raise the limit, or use a shallow depth", mib(limit))
}
