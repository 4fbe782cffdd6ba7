package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

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

// configureStatuses sets up (or drops) the commit status reporter of the
// EnvoySource name from its spec; repoURL is the repository the commits
// come from (spec.git.url, or the Flux object's spec.url). A
// misconfiguration is returned, to be shown; serving goes on regardless.
func (c *Controller) configureStatuses(es *v1alpha1.EnvoySource, name, repoURL string) error {
	cs := es.Spec.CommitStatus
	if cs == nil {
		c.dropReporter(name)
		return nil
	}
	want := reporterOf{spec: *cs, url: repoURL}
	c.mu.Lock()
	have, ok := c.reporterSpecs[name]
	c.mu.Unlock()
	if ok && have == want {
		return nil
	}
	base, repo := forge.FromRepositoryURL(forge.Provider(cs.Provider), repoURL)
	if cs.Address != "" {
		base = cs.Address
	}
	if cs.Repository != "" {
		repo = cs.Repository
	}
	if repo == "" || (base == "" && cs.Provider == string(forge.ProviderGitea)) {
		c.misconfigured(name, want)
		return fmt.Errorf("spec.commitStatus: the forge address and repository cannot be derived from %q: set address and repository", repoURL)
	}
	secret := types.NamespacedName{Namespace: es.Namespace, Name: cs.TokenSecretRef.Name}
	rep, err := forge.New(forge.Provider(cs.Provider), forge.Config{BaseURL: base, Repository: repo, Token: c.secretToken(secret), HTTPClient: sources.ForgeClient(c.fetchGuard)})
	if err != nil {
		c.misconfigured(name, want)
		return fmt.Errorf("spec.commitStatus: %w", err)
	}
	c.mu.Lock()
	c.reporters[name], c.reporterSpecs[name] = rep, want
	c.mu.Unlock()
	c.feedback.SetTarget(name, true)
	return nil
}

// misconfigured records a commitStatus that cannot post: nothing is
// queued for it, and what an earlier run queued is dropped.
func (c *Controller) misconfigured(name string, spec reporterOf) {
	c.dropReporter(name)
	c.mu.Lock()
	c.reporterSpecs[name] = spec
	c.mu.Unlock()
}

func (c *Controller) dropReporter(name string) {
	c.feedback.SetTarget(name, false)
	c.mu.Lock()
	delete(c.reporters, name)
	delete(c.reporterSpecs, name)
	c.mu.Unlock()
}

// secretToken reads the forge token from a Secret on every post, so a
// rotated token takes effect at once. Its errors never hold the token.
func (c *Controller) secretToken(key types.NamespacedName) forge.TokenFunc {
	return func(ctx context.Context) (string, error) {
		var s corev1.Secret
		if err := c.client.Get(ctx, key, &s); err != nil {
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

// lookupReporter finds the reporter of a target the dispatcher has
// statuses for: one configured by a reconcile, or none yet (right after a
// restart, until the EnvoySource is reconciled), or none ever (the
// EnvoySource is gone, or posts no statuses any more).
func (c *Controller) lookupReporter(target string) (forge.Reporter, error) {
	c.mu.Lock()
	rep, ok := c.reporters[target]
	_, configured := c.reporterSpecs[target]
	c.mu.Unlock()
	switch {
	case ok:
		return rep, nil
	case configured:
		return nil, fmt.Errorf("the commitStatus of %s cannot post: %w", target, forge.ErrUnknownTarget)
	}
	kind, rest, _ := strings.Cut(target, "/")
	ns, name, found := strings.Cut(rest, "/")
	if kind != "envoysource" || !found {
		return nil, forge.ErrUnknownTarget
	}
	var es v1alpha1.EnvoySource
	err := c.mgr.GetClient().Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &es)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("EnvoySource %s/%s is gone: %w", ns, name, forge.ErrUnknownTarget)
	case err != nil:
		return nil, err
	case es.Spec.CommitStatus == nil:
		return nil, fmt.Errorf("EnvoySource %s/%s posts no commit statuses any more: %w", ns, name, forge.ErrUnknownTarget)
	}
	return nil, errors.New("the EnvoySource is not reconciled yet")
}
