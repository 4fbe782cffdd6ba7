package prs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// maxAreas bounds the work areas WorkAreas reports (a request number is
// a directory; anything past this many is left for a later sweep).
const maxAreas = 10000

// WorkAreas returns the numbers of the requests that have a work area: a
// home that learns of closed requests by polling (and so may never see
// the close of one closed while it was down) removes those no longer open.
func (g GitFetcher) WorkAreas() ([]int64, error) {
	dir := filepath.Join(g.Root, safeName(g.Source.Name))
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, e := range entries {
		if len(out) == maxAreas {
			break
		}
		if n, err := strconv.ParseInt(e.Name(), 10, 64); err == nil && n > 0 && e.IsDir() {
			out = append(out, n)
		}
	}
	return out, nil
}
