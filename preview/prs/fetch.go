package prs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/legate-dev/legate/sources"
	gitsource "github.com/legate-dev/legate/sources/git"
)

// GitFetcher fetches a request's head from the target source's repository
// into the request's own work area, with the source's configuration: its
// URL, credentials, path, timeout, depth, size and file bounds and its
// memory budget (shared with the source, so previews cannot make the
// served fetches run out of it).
type GitFetcher struct {
	// Source is the target source's driver configuration.
	Source gitsource.Config
	// Root holds the work areas, Root/<source>/<number>.
	Root string
}

// workArea is where request number of source is cloned.
func (g GitFetcher) workArea(number int64) string {
	return filepath.Join(g.Root, safeName(g.Source.Name), strconv.FormatInt(number, 10))
}

// safeName keeps a source name from leaving Root (standalone already
// refuses such names; this is the second lock).
func safeName(name string) string {
	name = strings.NewReplacer("/", "_", "\\", "_", "\x00", "_").Replace(name)
	if name == "" || name == "." || name == ".." {
		return "_"
	}
	return name
}

// Fetch fetches req's head. The result's Origin names the source (so that
// the render resolves its secrets as the source's) and the head's commit.
func (g GitFetcher) Fetch(ctx context.Context, req Request) (*sources.Result, error) {
	cfg := g.Source
	cfg.Ref = gitsource.Ref{Name: req.HeadRef}
	cfg.StateDir = g.workArea(req.Number)
	src, err := gitsource.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("pull request %d of source %q: %w", req.Number, g.Source.Name, err)
	}
	res, err := src.Fetch(ctx)
	if err != nil {
		return nil, fmt.Errorf("pull request %d of source %q: fetch %s: %w", req.Number, g.Source.Name, req.HeadRef, err)
	}
	return res, nil
}

// Remove deletes request number's work area.
func (g GitFetcher) Remove(number int64) error {
	if err := os.RemoveAll(g.workArea(number)); err != nil {
		return fmt.Errorf("remove the work area of pull request %d of source %q: %w", number, g.Source.Name, err)
	}
	return nil
}
