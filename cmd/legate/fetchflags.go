package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/sources/envoysource"
)

// fetchFlags are legate controller's flags of EnvoySource fetches: the
// workers, each namespace's share of them, the per-fetch timeout and the
// memory the fetched files may take.
type fetchFlags struct {
	workers, perNamespace     int
	timeout                   time.Duration
	sourceBytes, sourcesBytes sizeValue
}

func (f *fetchFlags) register(fl *pflag.FlagSet) {
	f.sourceBytes, f.sourcesBytes = sizeValue(sources.DefaultSourceBytes), sizeValue(sources.DefaultTotalBytes)
	fl.IntVar(&f.workers, "fetch-workers", sources.DefaultFetchWorkers, "EnvoySources fetched at once")
	fl.IntVar(&f.perNamespace, "fetches-per-namespace", sources.DefaultFetchesPerNamespace, "of --fetch-workers, how many one namespace may take (a namespace already fetching never takes the last free one); its other fetches wait their turn")
	fl.DurationVar(&f.timeout, "fetch-timeout", sources.DefaultFetchTimeout, "longest one fetch of an EnvoySource may take, whatever its Git, OCI or Flux server does")
	fl.Var(&f.sourceBytes, "source-max-size", "configuration files (*.yaml, *.yml, *.json, *.cue) one EnvoySource may keep in memory; its other files are never kept")
	fl.Var(&f.sourcesBytes, "sources-max-size", "configuration files all EnvoySources may keep in memory together")
}

// apply completes opts with the flags.
func (f *fetchFlags) apply(opts *controller.Options) {
	opts.Fetch = envoysource.Limits{
		Workers: f.workers, PerNamespace: f.perNamespace, Timeout: f.timeout,
		SourceMaxBytes: int64(f.sourceBytes), SourcesMaxBytes: int64(f.sourcesBytes),
	}
}

// sizeValue is a byte count flag written as a quantity ("32Mi", "1Gi").
type sizeValue int64

func (s *sizeValue) String() string {
	return resource.NewQuantity(int64(*s), resource.BinarySI).String()
}

func (s *sizeValue) Type() string { return "size" }

func (s *sizeValue) Set(v string) error {
	q, err := resource.ParseQuantity(v)
	if err != nil || q.Sign() <= 0 {
		return fmt.Errorf("%q is not a positive size (e.g. 32Mi, 1Gi)", v)
	}
	*s = sizeValue(q.Value())
	return nil
}
