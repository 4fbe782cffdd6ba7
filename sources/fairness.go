package sources

import (
	"sync"
	"time"
)

// Defaults of the fetch workers a home shares between the namespaces (or
// other tenants) whose sources it fetches.
const (
	DefaultFetchWorkers        = 4
	DefaultFetchesPerNamespace = 2
	DefaultFetchTimeout        = 60 * time.Second
	// FairRetry is when a fetch that had to wait for its namespace's turn
	// is tried again.
	FairRetry = 2 * time.Second
)

// FairShare decides which fetches may run, so that one namespace (a
// tenant) cannot occupy every worker: a namespace runs at most
// perNamespace fetches at once, and a namespace already fetching never
// takes the last free worker, which stays for a namespace that fetches
// nothing. A fetch refused waits for a later turn (its caller retries it,
// e.g. after FairRetry). It holds no clock and does no I/O; it is safe for
// concurrent use.
type FairShare struct {
	workers, perNamespace int

	mu      sync.Mutex
	running map[string]int // fetches running, by namespace
	busy    int            // of all namespaces
}

// NewFairShare returns a FairShare of workers fetch workers (at least 1);
// perNamespace is at least 1 and at most workers.
func NewFairShare(workers, perNamespace int) *FairShare {
	workers = max(workers, 1)
	return &FairShare{workers: workers, perNamespace: min(max(perNamespace, 1), workers), running: map[string]int{}}
}

// Acquire takes a worker for a fetch of namespace ns, or reports that it
// must wait. Every true answer is followed by one Release(ns).
func (f *FairShare) Acquire(ns string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.running[ns]
	if f.busy >= f.workers || n >= f.perNamespace || (n > 0 && f.busy >= f.workers-1) {
		return false
	}
	f.running[ns]++
	f.busy++
	return true
}

// Release returns the worker a fetch of ns took; a Release without an
// Acquire is ignored.
func (f *FairShare) Release(ns string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running[ns] == 0 {
		return
	}
	f.busy--
	if f.running[ns]--; f.running[ns] == 0 {
		delete(f.running, ns)
	}
}
