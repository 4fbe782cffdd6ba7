// Package envoysource builds the driver an EnvoySource's spec asks for: a
// Git, OCI or Flux source (sources/git, sources/oci, sources/flux), with
// the credentials of its Secret read as Flux reads them. Building touches
// neither the network nor a clone, so that admission can check a spec the
// way a reconcile will use it. Reading the Secret, keeping the drivers
// and scheduling their fetches is the Kubernetes home's work.
package envoysource

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/netguard"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/sources/flux"
	gitsource "github.com/legate-dev/legate/sources/git"
	ocisource "github.com/legate-dev/legate/sources/oci"
)

// Env is what every EnvoySource's driver shares in one home.
type Env struct {
	// StateDir holds the Git clones.
	StateDir string
	// Guard checks the addresses of Git and OCI fetches.
	Guard *netguard.Guard
	// Budget bounds the files every driver keeps.
	Budget *sources.Budget
	// Timeout bounds each fetch.
	Timeout time.Duration
	// Flux reads Flux's source objects.
	Flux client.Reader
	// FluxHTTP is the client that downloads Flux artifacts
	// (sources.FluxClient); it is asked for only by a spec with a sourceRef.
	FluxHTTP func() *http.Client

	// clones is the registry of Git clones of the built source's
	// namespace (Drivers sets it): the EnvoySources of one namespace that
	// fetch a repository alike share its clone; nil gives a clone of its
	// own.
	clones *gitsource.Clones
}

// SecretName is the name of the Secret es's credentials are in, "" for
// none.
func SecretName(es *v1alpha1.EnvoySource) string {
	switch {
	case es.Spec.Git != nil && es.Spec.Git.SecretRef != nil:
		return es.Spec.Git.SecretRef.Name
	case es.Spec.OCI != nil && es.Spec.OCI.SecretRef != nil:
		return es.Spec.OCI.SecretRef.Name
	}
	return ""
}

// Repository is the URL of the repository es's commits come from: its
// Git URL, or what the last fetch said (a Flux object's spec.url).
func Repository(es *v1alpha1.EnvoySource, res *sources.Result) string {
	switch {
	case es.Spec.Git != nil:
		return es.Spec.Git.URL
	case res != nil && res.Origin.Kind == sources.KindGit:
		return res.Origin.URL
	}
	return ""
}

// GitConfig is the driver configuration of es, of kind git, named name in
// the pipeline, with the credentials of secret (nil for none): the
// source's fetches and its pull requests' previews use the same.
func GitConfig(es *v1alpha1.EnvoySource, name string, secret *corev1.Secret, env Env) gitsource.Config {
	data := func(k string) string {
		if secret == nil {
			return ""
		}
		return string(secret.Data[k])
	}
	spec := es.Spec
	cfg := gitsource.Config{Name: name, URL: spec.Git.URL, Path: spec.Path, StateDir: env.StateDir, Timeout: env.Timeout, Budget: env.Budget}
	cfg.Guard = env.Guard
	if ref := spec.Git.Ref; ref != nil {
		cfg.Ref = gitsource.Ref{Branch: ref.Branch, Tag: ref.Tag, SemVer: ref.SemVer, Name: ref.Name, Commit: ref.Commit}
	}
	if secret != nil {
		// Clones shared in the namespace count the credentials by the
		// Secret they come from: a rotated Secret keeps its clone.
		cfg.CredentialsID = "Secret " + es.Namespace + "/" + secret.Name
	}
	cfg.Auth = gitsource.Auth{
		Username: data("username"), Password: sources.Literal(data("password")),
		BearerToken: sources.Literal(data("bearerToken")), SSHKey: sources.Literal(data("identity")),
		KnownHosts: data("known_hosts"),
	}
	// With an SSH key, Flux's "password" key is the key's passphrase.
	if data("identity") != "" {
		cfg.Auth.Password, cfg.Auth.SSHKeyPassphrase = sources.Secret{}, sources.Literal(data("password"))
	}
	return cfg
}

// Build constructs the driver of es, named name in the pipeline, with the
// credentials of secret (the Secret SecretName names; nil when it names
// none, or to check a spec without it). Errors name es and the field.
func Build(es *v1alpha1.EnvoySource, name string, secret *corev1.Secret, env Env) (sources.Source, error) {
	field := func(err error) error { return fmt.Errorf("EnvoySource %s/%s: %w", es.Namespace, es.Name, err) }
	switch spec := es.Spec; {
	case spec.Git != nil:
		cfg := GitConfig(es, name, secret, env)
		cfg.Clones = env.clones
		src, err := gitsource.New(cfg)
		if err != nil {
			return nil, field(fmt.Errorf("spec.git: %w", err))
		}
		return src, nil
	case spec.OCI != nil:
		cfg := ocisource.Config{Name: name, URL: spec.OCI.URL, Path: spec.Path, Timeout: env.Timeout, Budget: env.Budget}
		cfg.Guard = env.Guard
		if ref := spec.OCI.Ref; ref != nil {
			cfg.Ref = ocisource.Ref{Tag: ref.Tag, SemVer: ref.SemVer, Digest: ref.Digest}
		}
		if secret != nil {
			cfg.DockerConfigJSON = secret.Data[corev1.DockerConfigJsonKey]
			if cfg.DockerConfigJSON == nil {
				return nil, field(fmt.Errorf("spec.oci.secretRef: Secret %s has no %s entry (a kubernetes.io/dockerconfigjson Secret)", secret.Name, corev1.DockerConfigJsonKey))
			}
		}
		src, err := ocisource.New(cfg)
		if err != nil {
			return nil, field(fmt.Errorf("spec.oci: %w", err))
		}
		return src, nil
	case spec.SourceRef != nil:
		ns := cmp.Or(spec.SourceRef.Namespace, es.Namespace)
		if ns != es.Namespace {
			return nil, field(fmt.Errorf("spec.sourceRef.namespace %q: an EnvoySource reads Flux sources of its own namespace (%s) only", ns, es.Namespace))
		}
		src, err := flux.New(flux.Config{
			Name: name, Reader: env.Flux, Kind: spec.SourceRef.Kind,
			Key: types.NamespacedName{Namespace: ns, Name: spec.SourceRef.Name}, Path: spec.Path, HTTP: env.FluxHTTP(),
			Timeout: env.Timeout, Budget: env.Budget,
		})
		if err != nil {
			return nil, field(fmt.Errorf("spec.sourceRef: %w", err))
		}
		return src, nil
	}
	return nil, field(errors.New("spec: set one of git, oci and sourceRef"))
}
