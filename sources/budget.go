package sources

import (
	"fmt"
	"path"
	"sync"
)

// Kept reports whether a fetched file is one the renderer may read: YAML
// and JSON documents (legate.yaml among them) and CUE files (packages,
// policy/, cue.mod/module.cue). Drivers keep only these in memory; every
// other file of a repository or artifact (READMEs, images, archives) is
// skipped without being read into memory.
func Kept(name string) bool {
	switch path.Ext(name) {
	case ".yaml", ".yml", ".json", ".cue":
		return true
	}
	return false
}

// Default bounds of a Budget.
const (
	// DefaultSourceBytes bounds the files one source keeps.
	DefaultSourceBytes int64 = 32 << 20
	// DefaultTotalBytes bounds the files all sources sharing a Budget
	// keep together.
	DefaultTotalBytes int64 = 128 << 20
)

// Budget bounds the bytes of file contents that fetched trees keep in
// memory: each source's tree within a per-source limit, the trees of all
// the sources that share the Budget within a total. A driver counts every
// file it keeps before reading it (Charge.Add), so a fetch over a limit
// stops before the bytes are allocated. The tree a fetch replaces is not
// counted against that fetch, so a source whose tree grows does not block
// itself; while fetches run, memory may exceed the total by at most one
// per-source limit per running fetch.
//
// A Budget is safe for concurrent use.
type Budget struct {
	perSource, total int64

	mu   sync.Mutex
	held map[string]int64 // bytes of the tree each source keeps
	sum  int64            // of held
	open int64            // counted by fetches not yet kept or dropped
}

// NewBudget returns a Budget; a limit <= 0 takes its default, and a total
// below the per-source limit is raised to it.
func NewBudget(perSource, total int64) *Budget {
	if perSource <= 0 {
		perSource = DefaultSourceBytes
	}
	if total <= 0 {
		total = DefaultTotalBytes
	}
	return &Budget{perSource: perSource, total: max(total, perSource), held: map[string]int64{}}
}

// Limits are the per-source limit and the total.
func (b *Budget) Limits() (perSource, total int64) { return b.perSource, b.total }

// Fetch starts counting what one fetch of source keeps. The caller ends
// it with Keep (the fetched tree replaces the source's previous one) or
// Drop (the fetch failed); a deferred Drop after Keep does nothing.
func (b *Budget) Fetch(source string) *Charge { return &Charge{b: b, source: source} }

// Release forgets what source keeps (the source is gone or rebuilt).
func (b *Budget) Release(source string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sum -= b.held[source]
	delete(b.held, source)
}

// Held is what source keeps, and what all sources keep together.
func (b *Budget) Held(source string) (mine, all int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held[source], b.sum
}

// Charge counts the files one fetch keeps. It is used by one goroutine.
type Charge struct {
	b      *Budget
	source string
	n      int64
	done   bool
}

// Add counts n bytes of file before they are read, or refuses them with a
// *LimitError when the source or all sources would keep too much.
func (c *Charge) Add(file string, n int64) error {
	b := c.b
	if n < 0 || c.n+n > b.perSource {
		return &LimitError{File: file, Limit: b.perSource}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	others := b.sum - b.held[c.source] + b.open - c.n
	if others+c.n+n > b.total {
		return &LimitError{File: file, Limit: b.total, AllSources: true, Others: others}
	}
	c.n += n
	b.open += n
	return nil
}

// Keep records the fetched tree as what the source keeps from now on.
func (c *Charge) Keep() {
	c.end(true)
}

// Drop forgets what the fetch counted: its tree is not kept.
func (c *Charge) Drop() {
	c.end(false)
}

func (c *Charge) end(keep bool) {
	if c.done {
		return
	}
	c.done = true
	b := c.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.open -= c.n
	if keep {
		b.sum += c.n - b.held[c.source]
		b.held[c.source] = c.n
	}
}

// LimitError is a fetch refused because what it keeps would exceed a
// limit of its Budget.
type LimitError struct {
	// File is the file that did not fit.
	File string
	// Limit is the limit exceeded: per source, or across sources when
	// AllSources is set (Others is then what the other sources and
	// running fetches keep).
	Limit      int64
	AllSources bool
	Others     int64
}

func (e *LimitError) Error() string {
	if e.AllSources {
		return fmt.Sprintf("the configuration files kept by all sources would exceed %s, the limit across sources (at %s; the other sources keep %s): nothing of this fetch is kept; raise the limit or shrink the sources", Size(e.Limit), e.File, Size(e.Others))
	}
	return fmt.Sprintf("the configuration files (*.yaml, *.yml, *.json, *.cue) of this source exceed %s, the per-source limit (at %s): point the source at a smaller directory or raise the limit", Size(e.Limit), e.File)
}

// Size formats a byte count for a message: "32 MiB", "1.5 KiB", "12 bytes".
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
