package forge

import (
	"context"
	"fmt"
	"strings"

	"code.gitea.io/sdk/gitea"
)

// Gitea posts statuses through the Gitea API
// (POST /api/v1/repos/{owner}/{repo}/statuses/{sha}).
type Gitea struct {
	cfg         Config
	owner, name string
}

// NewGitea returns a Gitea reporter.
func NewGitea(cfg Config) (*Gitea, error) {
	owner, name, err := splitRepo(cfg.Repository)
	if err != nil {
		return nil, fmt.Errorf("gitea reporter: %w", err)
	}
	if cfg.BaseURL == "" {
		return nil, fmt.Errorf("gitea reporter: set the base url of the Gitea server")
	}
	return &Gitea{cfg: cfg, owner: owner, name: name}, nil
}

var giteaStates = map[State]gitea.StatusState{
	StatePending: gitea.StatusPending,
	StateSuccess: gitea.StatusSuccess,
	StateFailure: gitea.StatusFailure,
	StateError:   gitea.StatusError,
}

// Post implements Reporter.
func (g *Gitea) Post(ctx context.Context, st Status) error {
	st, tok, err := g.cfg.prepare(ctx, st, GiteaDescriptionLimit)
	if err != nil {
		return err
	}
	// The SDK's context is per client, so each post gets its own client;
	// skipping the version probe keeps that to one request.
	client, err := gitea.NewClient(g.cfg.BaseURL,
		gitea.SetHTTPClient(g.cfg.httpClient()),
		gitea.SetToken(tok),
		gitea.SetContext(ctx),
		gitea.SetGiteaVersion(""),
	)
	if err != nil {
		return postError(g.cfg.Repository, 0, err, tok)
	}
	_, resp, err := client.CreateStatus(g.owner, g.name, st.Commit, gitea.CreateStatusOption{
		State:       giteaStates[st.State],
		TargetURL:   st.TargetURL,
		Description: st.Description,
		Context:     st.Context,
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

// CommentLimit implements Commenter.
func (g *Gitea) CommentLimit() int { return GiteaCommentLimit }

// UpsertComment implements Commenter through the issue comments API (a
// pull request is an issue to Gitea).
func (g *Gitea) UpsertComment(ctx context.Context, c Comment) error {
	tok, err := g.cfg.token(ctx)
	if err != nil {
		return err
	}
	if c, err = prepareComment(c, GiteaCommentLimit, tok); err != nil {
		return err
	}
	client, err := gitea.NewClient(g.cfg.BaseURL,
		gitea.SetHTTPClient(boundedClient(g.cfg.httpClient())),
		gitea.SetToken(tok),
		gitea.SetContext(ctx),
		gitea.SetGiteaVersion(""),
	)
	if err != nil {
		return commentError(g.cfg.Repository, c.Number, 0, err, tok)
	}
	fail := func(resp *gitea.Response, err error) error {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		return commentError(g.cfg.Repository, c.Number, code, err, tok)
	}
	for page := 1; page <= maxCommentPages; page++ {
		list, resp, err := client.ListIssueComments(g.owner, g.name, c.Number, gitea.ListIssueCommentOptions{
			ListOptions: gitea.ListOptions{Page: page, PageSize: commentPageSize},
		})
		if err != nil {
			return fail(resp, err)
		}
		for _, old := range list {
			if strings.HasPrefix(old.Body, c.Marker) {
				if old.Body == c.Body {
					return nil
				}
				_, resp, err := client.EditIssueComment(g.owner, g.name, old.ID, gitea.EditIssueCommentOption{Body: c.Body})
				if err != nil {
					return fail(resp, err)
				}
				return nil
			}
		}
		if len(list) < commentPageSize {
			break
		}
	}
	_, resp, err := client.CreateIssueComment(g.owner, g.name, c.Number, gitea.CreateIssueCommentOption{Body: c.Body})
	if err != nil {
		return fail(resp, err)
	}
	return nil
}
