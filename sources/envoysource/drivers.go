package envoysource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/sources/flux"
	gitsource "github.com/legate-dev/legate/sources/git"
)

// ErrTurn is a fetch that must wait for its namespace's turn
// (sources.FairShare): the caller asks again after sources.FairRetry.
var ErrTurn = errors.New("the namespace runs as many fetches as it may")

// SpecError is a fetch refused before any network was read: the spec, or
// the Secret it names, cannot make a driver. The user must change them; a
// retry alone does not help.
type SpecError struct{ Err error }

func (e *SpecError) Error() string { return e.Err.Error() }
func (e *SpecError) Unwrap() error { return e.Err }

// Drivers keeps the driver of every EnvoySource of one home, rebuilt when
// the spec or its credentials change, and runs their fetches within the
// fetch limits they share. It is safe for concurrent use; the home's work
// queue hands it at most one fetch per EnvoySource at a time.
type Drivers struct {
	env Env
	// fetches decides which of the workers' fetches may run now.
	fetches *sources.FairShare

	mu      sync.Mutex
	drivers map[string]*driver // by pipeline source name
	// clones are the Git clones the EnvoySources of a namespace share, by
	// namespace: no clone is shared across namespaces. A clone goes with
	// the last driver using it (closeDriver).
	clones map[string]*gitsource.Clones
}

// driver is the fetching half of one EnvoySource.
type driver struct {
	src sources.Source
	// built identifies what it was built from: the generation and the
	// resource version of its credentials Secret.
	built string
}

// NewDrivers keeps the drivers built with env, workers fetches at once and
// perNamespace of them for one namespace (sources.NewFairShare).
func NewDrivers(env Env, workers, perNamespace int) *Drivers {
	return &Drivers{env: env, fetches: sources.NewFairShare(workers, perNamespace), drivers: map[string]*driver{}, clones: map[string]*gitsource.Clones{}}
}

// Fetch fetches es, named name in the pipeline, through its driver (its
// credentials read through reader), when its namespace's turn allows
// (ErrTurn when not), within the per-fetch timeout. A driver that cannot
// be built is a *SpecError.
func (d *Drivers) Fetch(ctx context.Context, reader client.Reader, es *v1alpha1.EnvoySource, name string) (*sources.Result, error) {
	drv, err := d.driverOf(ctx, reader, es, name)
	if err != nil {
		return nil, &SpecError{Err: err}
	}
	if !d.fetches.Acquire(es.Namespace) {
		return nil, ErrTurn
	}
	defer d.fetches.Release(es.Namespace)
	fctx, cancel := context.WithTimeout(ctx, d.env.Timeout)
	defer cancel()
	res, err := drv.src.Fetch(fctx)
	var over *sources.LimitError
	switch {
	case errors.Is(err, flux.ErrDigestMismatch):
		return nil, err
	case errors.As(err, &over):
		return nil, fmt.Errorf("EnvoySource %s/%s: %w", es.Namespace, es.Name, err)
	case err != nil && fctx.Err() != nil && ctx.Err() == nil:
		return nil, fmt.Errorf("EnvoySource %s/%s: the fetch was stopped at the per-fetch timeout of %s: %w", es.Namespace, es.Name, d.env.Timeout, err)
	}
	return res, err
}

// driverOf returns es's driver, built anew when its spec or credentials
// changed since the last one.
func (d *Drivers) driverOf(ctx context.Context, reader client.Reader, es *v1alpha1.EnvoySource, name string) (*driver, error) {
	var secret *corev1.Secret
	built := fmt.Sprint(es.Generation)
	if ref := SecretName(es); ref != "" {
		secret = &corev1.Secret{}
		if err := reader.Get(ctx, types.NamespacedName{Namespace: es.Namespace, Name: ref}, secret); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("EnvoySource %s/%s: secretRef: Secret %s/%s does not exist", es.Namespace, es.Name, es.Namespace, ref)
			}
			return nil, fmt.Errorf("EnvoySource %s/%s: read Secret %s/%s: %w", es.Namespace, es.Name, es.Namespace, ref, err)
		}
		built += "/" + secret.ResourceVersion
	}
	d.mu.Lock()
	drv := d.drivers[name]
	d.mu.Unlock()
	if drv != nil && drv.built == built {
		return drv, nil
	}
	env := d.env
	d.mu.Lock()
	if env.clones = d.clones[es.Namespace]; env.clones == nil {
		env.clones = gitsource.NewClones("namespace " + es.Namespace)
		d.clones[es.Namespace] = env.clones
	}
	d.mu.Unlock()
	src, err := Build(es, name, secret, env)
	if err != nil {
		return nil, err
	}
	drv = &driver{src: src, built: built}
	d.mu.Lock()
	old := d.drivers[name]
	d.drivers[name] = drv
	d.mu.Unlock()
	// The new driver holds the clone before the old one lets it go, so
	// that a clone both use is kept.
	closeDriver(old)
	d.env.Budget.Release(name) // the files of the driver replaced are garbage
	return drv, nil
}

// Check checks es's spec as Fetch builds its driver from it, without
// reading its Secret or the network (admission).
func (d *Drivers) Check(es *v1alpha1.EnvoySource) error {
	_, err := Build(es, sources.EnvoySourceRef(es.Namespace, es.Name).String()+"/admission", nil, d.env)
	return err
}

// Drop forgets the driver of the source name (its EnvoySource is gone)
// and the files it kept.
func (d *Drivers) Drop(name string) {
	d.mu.Lock()
	old := d.drivers[name]
	delete(d.drivers, name)
	d.mu.Unlock()
	closeDriver(old)
	d.env.Budget.Release(name)
}

// closeDriver lets go of what drv holds: a Git driver's share of a clone,
// which is removed with its last driver. drv may be nil.
func closeDriver(drv *driver) {
	if drv == nil {
		return
	}
	if c, ok := drv.src.(io.Closer); ok {
		_ = c.Close() // a Git source's Close fails never
	}
}

// Refs are the EnvoySources whose drivers run.
func (d *Drivers) Refs() []sources.Ref {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]sources.Ref, 0, len(d.drivers))
	for name := range d.drivers {
		if ref, ok := sources.ParseRef(name); ok {
			out = append(out, ref)
		}
	}
	return out
}

// Env is the environment the drivers are built with: the pull requests'
// previews fetch with the same bounds.
func (d *Drivers) Env() Env { return d.env }
