package forge

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/google/go-github/v84/github"
)

// GitHub posts statuses through the GitHub REST API
// (POST /repos/{owner}/{repo}/statuses/{sha}).
type GitHub struct {
	cfg         Config
	owner, name string
	base        *url.URL
}

// NewGitHub returns a GitHub reporter.
func NewGitHub(cfg Config) (*GitHub, error) {
	owner, name, err := splitRepo(cfg.Repository)
	if err != nil {
		return nil, fmt.Errorf("github reporter: %w", err)
	}
	g := &GitHub{cfg: cfg, owner: owner, name: name}
	if cfg.BaseURL != "" {
		u, err := url.Parse(strings.TrimSuffix(cfg.BaseURL, "/") + "/")
		if err != nil {
			return nil, fmt.Errorf("github reporter: base url %q: %w", cfg.BaseURL, err)
		}
		g.base = u
	}
	return g, nil
}

// Post implements Reporter.
func (g *GitHub) Post(ctx context.Context, st Status) error {
	st, tok, err := g.cfg.prepare(ctx, st, GitHubDescriptionLimit)
	if err != nil {
		return err
	}
	client := github.NewClient(g.cfg.httpClient()).WithAuthToken(tok)
	if g.base != nil {
		client.BaseURL = g.base
	}
	_, resp, err := client.Repositories.CreateStatus(ctx, g.owner, g.name, st.Commit, github.RepoStatus{
		State:       github.Ptr(string(st.State)),
		Context:     github.Ptr(st.Context),
		Description: github.Ptr(st.Description),
		TargetURL:   optional(st.TargetURL),
	})
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		return postError(g.cfg.Repository, code, err, tok)
	}
	return nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
