package forge

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/legate-dev/legate/sources"
)

// Provider names a forge.
type Provider string

// Supported providers.
const (
	ProviderGitea  Provider = "gitea"
	ProviderGitHub Provider = "github"
	ProviderGitLab Provider = "gitlab"
)

// Config configures a reporter for one repository.
type Config struct {
	// BaseURL of the forge: Gitea's root URL (https://gitea.example);
	// GitHub's API URL ("" for api.github.com, https://ghe.example/api/v3/
	// for Enterprise); GitLab's root URL ("" for gitlab.com).
	BaseURL string
	// Repository is "owner/name"; for GitLab the project path (which may
	// have sub-groups) or its numeric ID.
	Repository string
	// Token supplies an access token allowed to write commit statuses. It
	// is asked on every post, so a rotated token takes effect at once.
	Token TokenFunc
	// HTTPClient is used for every request; nil uses a client with a 30 s
	// timeout.
	HTTPClient *http.Client
}

// New returns the reporter for provider.
func New(provider Provider, cfg Config) (Reporter, error) {
	switch provider {
	case ProviderGitea:
		return NewGitea(cfg)
	case ProviderGitHub:
		return NewGitHub(cfg)
	case ProviderGitLab:
		return NewGitLab(cfg)
	default:
		return nil, fmt.Errorf("forge provider %q is not gitea, github or gitlab", provider)
	}
}

func (c *Config) httpClient() *http.Client {
	if c.HTTPClient != nil {
		return c.HTTPClient
	}
	return &http.Client{Timeout: 30 * time.Second}
}

// TokenFunc returns the forge token: from a file or the environment
// (SecretToken), or from wherever a home keeps it, such as a Kubernetes
// Secret. Its errors must not hold the token.
type TokenFunc func(ctx context.Context) (string, error)

// SecretToken reads the token from s (a file or an environment variable)
// on every call.
func SecretToken(s sources.Secret) TokenFunc {
	return func(context.Context) (string, error) { return s.Read() }
}

func (c *Config) token(ctx context.Context) (string, error) {
	if c.Token == nil {
		return "", fmt.Errorf("forge token for %s: none configured", c.Repository)
	}
	tok, err := c.Token(ctx)
	if err != nil {
		return "", fmt.Errorf("forge token for %s: %w", c.Repository, err)
	}
	return tok, nil
}

// postError scrubs the token and anything credential-shaped from a
// delivery error, keeping whether it is permanent.
func postError(repo string, code int, err error, token string) error {
	msg := fmt.Errorf("post commit status to %s: %s", repo, sources.Redact(err.Error(), token))
	return classify(code, msg)
}

// prepare reads the token and returns st validated, with its description
// scrubbed of that token (and other secrets) and trimmed to limit: the
// common start of every provider's Post.
func (c *Config) prepare(ctx context.Context, st Status, limit int) (Status, string, error) {
	tok, err := c.token(ctx)
	if err != nil {
		return st, "", err
	}
	st, err = prepare(st, limit, tok)
	return st, tok, err
}
