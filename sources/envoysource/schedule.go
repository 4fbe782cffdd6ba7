package envoysource

import (
	"cmp"
	"time"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/sources"
)

// Bounds of an EnvoySource's schedule.
const (
	// MinInterval is the shortest interval between two fetches honoured.
	MinInterval = 5 * time.Second
	// FetchRetry is the wait after a failed fetch when the interval is
	// longer.
	FetchRetry = 30 * time.Second
)

// Limits bound the fetches of one home's EnvoySources (legate
// controller's --fetch-* and --source(s)-max-size); zero or negative
// values are the defaults.
type Limits struct {
	// Workers is how many EnvoySources are fetched at once (default
	// sources.DefaultFetchWorkers); PerNamespace how many of them one
	// namespace may take (default sources.DefaultFetchesPerNamespace): a
	// fetch over it waits for its turn. A namespace already fetching never
	// takes the last free worker.
	Workers, PerNamespace int
	// Timeout bounds one fetch of an EnvoySource, whatever its Git, OCI or
	// Flux server does (default sources.DefaultFetchTimeout).
	Timeout time.Duration
	// SourceMaxBytes bounds the files (those the renderer reads) one
	// EnvoySource keeps in memory, SourcesMaxBytes what all of them keep
	// together (defaults sources.DefaultSourceBytes and
	// sources.DefaultTotalBytes).
	SourceMaxBytes, SourcesMaxBytes int64
}

// WithDefaults is l with the defaults in place of its zero values.
func (l Limits) WithDefaults() Limits {
	l.Workers = cmp.Or(max(l.Workers, 0), sources.DefaultFetchWorkers)
	l.PerNamespace = cmp.Or(max(l.PerNamespace, 0), sources.DefaultFetchesPerNamespace)
	l.Timeout = cmp.Or(max(l.Timeout, 0), sources.DefaultFetchTimeout)
	return l
}

// NewLimitedDrivers keeps the drivers built with env, within l: env's
// budget and per-fetch timeout are l's.
func NewLimitedDrivers(env Env, l Limits) *Drivers {
	l = l.WithDefaults()
	env.Budget = sources.NewBudget(l.SourceMaxBytes, l.SourcesMaxBytes)
	env.Timeout = l.Timeout
	return NewDrivers(env, l.Workers, l.PerNamespace)
}

// NextFetch is when to look at an EnvoySource again after a pass: at its
// spec.interval (MinInterval at the shortest), sooner after a failed fetch
// (FetchRetry) and, while what it fetched is still settling (its
// Reconciling condition is true), after settle.
func NextFetch(interval time.Duration, failed, settling bool, settle time.Duration) time.Duration {
	interval = max(interval, MinInterval)
	switch {
	case failed:
		return min(FetchRetry, interval)
	case settling:
		return min(settle, interval)
	}
	return interval
}

// RefersTo reports whether es reads the Flux source object of kind
// (flux.KindGitRepository, flux.KindOCIRepository) namespace/name.
func RefersTo(es *v1alpha1.EnvoySource, kind, namespace, name string) bool {
	ref := es.Spec.SourceRef
	return ref != nil && ref.Kind == kind && ref.Name == name && cmp.Or(ref.Namespace, es.Namespace) == namespace
}
