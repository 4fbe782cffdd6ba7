package forge

import (
	"context"
	"fmt"
	"strconv"

	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// GitLab posts statuses through the GitLab REST API
// (POST /projects/{id}/statuses/{sha}); the status context is GitLab's
// "name".
type GitLab struct {
	cfg     Config
	project any
}

// NewGitLab returns a GitLab reporter.
func NewGitLab(cfg Config) (*GitLab, error) {
	if cfg.Repository == "" {
		return nil, fmt.Errorf("gitlab reporter: set the project path or ID")
	}
	var project any = cfg.Repository
	if id, err := strconv.ParseInt(cfg.Repository, 10, 64); err == nil {
		project = id
	}
	return &GitLab{cfg: cfg, project: project}, nil
}

var gitlabStates = map[State]gitlab.BuildStateValue{
	StatePending: gitlab.Pending,
	StateSuccess: gitlab.Success,
	StateFailure: gitlab.Failed,
}

// Post implements Reporter.
func (g *GitLab) Post(ctx context.Context, st Status) error {
	st, tok, err := g.cfg.prepare(ctx, st, GitLabDescriptionLimit)
	if err != nil {
		return err
	}
	opts := []gitlab.ClientOptionFunc{gitlab.WithHTTPClient(g.cfg.httpClient()), gitlab.WithoutRetries()}
	if g.cfg.BaseURL != "" {
		opts = append(opts, gitlab.WithBaseURL(g.cfg.BaseURL))
	}
	client, err := gitlab.NewClient(tok, opts...)
	if err != nil {
		return postError(g.cfg.Repository, 0, err, tok)
	}
	_, resp, err := client.Commits.SetCommitStatus(g.project, st.Commit, &gitlab.SetCommitStatusOptions{
		State:       gitlabStates[st.State],
		Name:        gitlab.Ptr(st.Context),
		Description: gitlab.Ptr(st.Description),
		TargetURL:   optional(st.TargetURL),
	}, gitlab.WithContext(ctx))
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		return postError(g.cfg.Repository, code, err, tok)
	}
	return nil
}
