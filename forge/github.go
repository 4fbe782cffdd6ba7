package forge

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/google/go-github/v84/github"

	"github.com/legate-dev/legate/sources"
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
			// url.Parse's error quotes the URL, password and all.
			return nil, fmt.Errorf("github reporter: base url %q: %s", sources.Redact(cfg.BaseURL), sources.Redact(err.Error()))
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

// CommentLimit implements Commenter.
func (g *GitHub) CommentLimit() int { return GitHubCommentLimit }

// UpsertComment implements Commenter through the issue comments API (a
// pull request's conversation is its issue's).
func (g *GitHub) UpsertComment(ctx context.Context, c Comment) error {
	tok, err := g.cfg.token(ctx)
	if err != nil {
		return err
	}
	if c, err = prepareComment(c, GitHubCommentLimit, tok); err != nil {
		return err
	}
	client := github.NewClient(boundedClient(g.cfg.httpClient())).WithAuthToken(tok)
	if g.base != nil {
		client.BaseURL = g.base
	}
	fail := func(resp *github.Response, err error) error {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		return commentError(g.cfg.Repository, c.Number, code, err, tok)
	}
	number := int(c.Number)
	for page := 1; page <= maxCommentPages; page++ {
		list, resp, err := client.Issues.ListComments(ctx, g.owner, g.name, number, &github.IssueListCommentsOptions{
			ListOptions: github.ListOptions{Page: page, PerPage: commentPageSize},
		})
		if err != nil {
			return fail(resp, err)
		}
		for _, old := range list {
			if strings.HasPrefix(old.GetBody(), c.Marker) {
				if old.GetBody() == c.Body {
					return nil
				}
				_, resp, err := client.Issues.EditComment(ctx, g.owner, g.name, old.GetID(), &github.IssueComment{Body: github.Ptr(c.Body)})
				if err != nil {
					return fail(resp, err)
				}
				return nil
			}
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
	}
	_, resp, err := client.Issues.CreateComment(ctx, g.owner, g.name, number, &github.IssueComment{Body: github.Ptr(c.Body)})
	if err != nil {
		return fail(resp, err)
	}
	return nil
}
