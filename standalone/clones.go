package standalone

import (
	"fmt"
	"os"
	"path/filepath"
)

// pruneClones removes the clones under dir (the state directory's git/)
// that no configured source uses any more: a source removed from the
// configuration, or a clone kept under an older layout (a clone a source
// before sources of one repository shared theirs). A clone is a cache of
// its remote: the next fetch of a source that needs it makes it again.
func (s *Server) pruneClones(dir string) error {
	used := map[string]bool{}
	for _, l := range s.loops {
		if c, ok := l.src.(interface{ Dir() string }); ok {
			used[filepath.Clean(c.Dir())] = true
		}
	}
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the clones' directory: %w", err)
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if used[p] {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("remove the clone %s that no source uses: %w", p, err)
		}
		s.log.Info("removed a clone no configured source uses", "dir", p)
	}
	return nil
}
