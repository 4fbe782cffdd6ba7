package controller

import (
	"sync"
	"time"

	"github.com/legate-dev/legate/sources"
)

// Defaults of the EnvoySource fetch workers (Options).
const (
	DefaultFetchWorkers        = 4
	DefaultFetchesPerNamespace = 2
	DefaultFetchTimeout        = 60 * time.Second
	// fairRetry is when a fetch that had to wait for its namespace's
	// turn is tried again.
	fairRetry = 2 * time.Second
)

// sourceLimits are what EnvoySources share: the fetch workers and the
// memory their files may take.
type sourceLimits struct {
	// budget bounds the files every EnvoySource's driver keeps.
	budget *sources.Budget
	// fetches decides which fetches may run now.
	fetches *fairShare
	// timeout bounds each fetch.
	timeout time.Duration
}

// fairShare decides which EnvoySource fetches may run, so that one
// namespace (a tenant) cannot occupy every worker: a namespace runs at
// most perNamespace fetches at once, and a namespace already fetching
// never takes the last free worker, which stays for a namespace that
// fetches nothing. A fetch refused waits for a later turn (the reconciler
// requeues it). It holds no clock and does no I/O; it is safe for
// concurrent use.
type fairShare struct {
	workers, perNamespace int

	mu      sync.Mutex
	running map[string]int // fetches running, by namespace
	busy    int            // of all namespaces
}

// newFairShare returns a fairShare of workers fetch workers; perNamespace
// is at least 1 and at most workers.
func newFairShare(workers, perNamespace int) *fairShare {
	workers = max(workers, 1)
	return &fairShare{workers: workers, perNamespace: min(max(perNamespace, 1), workers), running: map[string]int{}}
}

// acquire takes a worker for a fetch of namespace ns, or reports that it
// must wait. Every true answer is followed by one release(ns).
func (f *fairShare) acquire(ns string) bool {
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

// release returns the worker a fetch of ns took.
func (f *fairShare) release(ns string) {
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
