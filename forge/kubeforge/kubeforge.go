// Package kubeforge keeps the commit-status reporters of the Kubernetes
// home's EnvoySources (a commit status is what a forge shows on a commit;
// not an object's status): each is built from its EnvoySource's
// spec.commitStatus, with the token read from its Secret on every post,
// and looked up by the forge.Dispatcher that posts.
package kubeforge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/sources"
)

// TokenKey is the entry of a commitStatus.tokenSecretRef Secret that holds
// the forge token.
const TokenKey = "token"

// reporterOf is what a reporter was built from, to rebuild it only when
// that changes.
type reporterOf struct {
	spec v1alpha1.CommitStatus
	url  string
}

// Reporters are the commit-status reporters of the EnvoySources, by
// pipeline source name: set up by the EnvoySource reconciler, looked up by
// the dispatcher that posts. Safe for concurrent use.
type Reporters struct {
	client     client.Client // direct: the token Secret, read on every post
	cache      client.Reader
	feedback   *forge.Feedback
	httpClient func() *http.Client // through the fetch guard

	mu        sync.Mutex
	reporters map[string]forge.Reporter
	specs     map[string]reporterOf
}

// New returns no reporters yet. c reads the token Secrets (directly, on
// every post), cache the EnvoySources; feedback is told which sources
// post; httpClient gives the client of the posts (sources.ForgeClient).
func New(c client.Client, cache client.Reader, feedback *forge.Feedback, httpClient func() *http.Client) *Reporters {
	return &Reporters{
		client: c, cache: cache, feedback: feedback, httpClient: httpClient,
		reporters: map[string]forge.Reporter{}, specs: map[string]reporterOf{},
	}
}

// Configure sets up (or drops) the reporter of the EnvoySource name from
// its spec; repoURL is the repository the commits come from (spec.git.url,
// or the Flux object's spec.url). A misconfiguration is returned, to be
// shown; serving goes on regardless.
func (cs *Reporters) Configure(es *v1alpha1.EnvoySource, name, repoURL string) error {
	spec := es.Spec.CommitStatus
	if spec == nil {
		cs.Drop(name)
		return nil
	}
	want := reporterOf{spec: *spec, url: repoURL}
	cs.mu.Lock()
	have, ok := cs.specs[name]
	cs.mu.Unlock()
	if ok && have == want {
		return nil
	}
	base, repo := forge.FromRepositoryURL(forge.Provider(spec.Provider), repoURL)
	if spec.Address != "" {
		base = spec.Address
	}
	if spec.Repository != "" {
		repo = spec.Repository
	}
	if repo == "" || (base == "" && spec.Provider == string(forge.ProviderGitea)) {
		cs.misconfigured(name, want)
		return fmt.Errorf("EnvoySource %s/%s: spec.commitStatus: the forge address and repository cannot be derived from %q: set address and repository", es.Namespace, es.Name, sources.Redact(repoURL))
	}
	secret := types.NamespacedName{Namespace: es.Namespace, Name: spec.TokenSecretRef.Name}
	rep, err := forge.New(forge.Provider(spec.Provider), forge.Config{BaseURL: base, Repository: repo, Token: cs.secretToken(secret), HTTPClient: cs.httpClient()})
	if err != nil {
		cs.misconfigured(name, want)
		return fmt.Errorf("EnvoySource %s/%s: spec.commitStatus: %w", es.Namespace, es.Name, err)
	}
	cs.mu.Lock()
	cs.reporters[name], cs.specs[name] = rep, want
	cs.mu.Unlock()
	cs.feedback.SetTarget(name, true)
	return nil
}

// misconfigured records a commitStatus that cannot post: nothing is
// queued for it, and what an earlier run queued is dropped.
func (cs *Reporters) misconfigured(name string, spec reporterOf) {
	cs.Drop(name)
	cs.mu.Lock()
	cs.specs[name] = spec
	cs.mu.Unlock()
}

// Drop stops the reporting of the EnvoySource name.
func (cs *Reporters) Drop(name string) {
	cs.feedback.SetTarget(name, false)
	cs.mu.Lock()
	delete(cs.reporters, name)
	delete(cs.specs, name)
	cs.mu.Unlock()
}

// secretToken reads the forge token from a Secret on every post, so a
// rotated token takes effect at once. Its errors never hold the token.
func (cs *Reporters) secretToken(key types.NamespacedName) forge.TokenFunc {
	return func(ctx context.Context) (string, error) {
		var s corev1.Secret
		if err := cs.client.Get(ctx, key, &s); err != nil {
			if apierrors.IsNotFound(err) {
				return "", fmt.Errorf("commitStatus.tokenSecretRef: Secret %s does not exist", key)
			}
			return "", fmt.Errorf("commitStatus.tokenSecretRef: read Secret %s: %w", key, err)
		}
		token := strings.TrimSpace(string(s.Data[TokenKey]))
		if token == "" {
			return "", fmt.Errorf("commitStatus.tokenSecretRef: Secret %s has no %q entry", key, TokenKey)
		}
		return token, nil
	}
}

// Lookup finds the reporter of a target the dispatcher has statuses for:
// one configured by a reconcile, or none yet (right after a restart,
// until the EnvoySource is reconciled), or none ever (the EnvoySource is
// gone, or posts no statuses any more).
func (cs *Reporters) Lookup(target string) (forge.Reporter, error) {
	cs.mu.Lock()
	rep, ok := cs.reporters[target]
	_, configured := cs.specs[target]
	cs.mu.Unlock()
	switch {
	case ok:
		return rep, nil
	case configured:
		return nil, fmt.Errorf("the commitStatus of %s cannot post: %w", target, forge.ErrUnknownTarget)
	}
	ref, ok := sources.ParseRef(target)
	if !ok || ref.Kind != sources.RefEnvoySource {
		return nil, forge.ErrUnknownTarget
	}
	var es v1alpha1.EnvoySource
	err := cs.cache.Get(context.Background(), types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, &es)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("EnvoySource %s/%s is gone: %w", ref.Namespace, ref.Name, forge.ErrUnknownTarget)
	case err != nil:
		return nil, err
	case es.Spec.CommitStatus == nil:
		return nil, fmt.Errorf("EnvoySource %s/%s posts no commit statuses any more: %w", ref.Namespace, ref.Name, forge.ErrUnknownTarget)
	}
	return nil, errors.New("the EnvoySource is not reconciled yet")
}
