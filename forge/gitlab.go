package forge

import (
	"context"
	"fmt"
	"strconv"
	"strings"

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
	StateError:   gitlab.Canceled,
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

// CommentLimit implements Commenter.
func (g *GitLab) CommentLimit() int { return GitLabCommentLimit }

// UpsertComment implements Commenter through the merge request notes API.
func (g *GitLab) UpsertComment(ctx context.Context, c Comment) error {
	tok, err := g.cfg.token(ctx)
	if err != nil {
		return err
	}
	if c, err = prepareComment(c, GitLabCommentLimit, tok); err != nil {
		return err
	}
	opts := []gitlab.ClientOptionFunc{gitlab.WithHTTPClient(boundedClient(g.cfg.httpClient())), gitlab.WithoutRetries()}
	if g.cfg.BaseURL != "" {
		opts = append(opts, gitlab.WithBaseURL(g.cfg.BaseURL))
	}
	client, err := gitlab.NewClient(tok, opts...)
	if err != nil {
		return commentError(g.cfg.Repository, c.Number, 0, err, tok)
	}
	fail := func(resp *gitlab.Response, err error) error {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		return commentError(g.cfg.Repository, c.Number, code, err, tok)
	}
	for page := int64(1); page <= maxCommentPages; page++ {
		list, resp, err := client.Notes.ListMergeRequestNotes(g.project, c.Number, &gitlab.ListMergeRequestNotesOptions{
			ListOptions: gitlab.ListOptions{Page: page, PerPage: commentPageSize},
		}, gitlab.WithContext(ctx))
		if err != nil {
			return fail(resp, err)
		}
		for _, old := range list {
			if old.System || !strings.HasPrefix(old.Body, c.Marker) {
				continue
			}
			if old.Body == c.Body {
				return nil
			}
			_, resp, err := client.Notes.UpdateMergeRequestNote(g.project, c.Number, old.ID, &gitlab.UpdateMergeRequestNoteOptions{Body: gitlab.Ptr(c.Body)}, gitlab.WithContext(ctx))
			if err != nil {
				return fail(resp, err)
			}
			return nil
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
	}
	_, resp, err := client.Notes.CreateMergeRequestNote(g.project, c.Number, &gitlab.CreateMergeRequestNoteOptions{Body: gitlab.Ptr(c.Body)}, gitlab.WithContext(ctx))
	if err != nil {
		return fail(resp, err)
	}
	return nil
}
