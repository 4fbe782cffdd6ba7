package forge

import (
	"context"
	"fmt"
	"regexp"
	"strconv"

	"code.gitea.io/sdk/gitea"
	"github.com/google/go-github/v84/github"
	gitlab "gitlab.com/gitlab-org/api/client-go"

	"github.com/legate-dev/legate/sources"
)

// OpenPullRequest is a pull request (GitLab: merge request) open into a
// branch, as a forge lists it: what a home that polls (rather than
// receiving the forge's webhooks) needs to preview it.
type OpenPullRequest struct {
	// Number is the forge's number of the request (GitLab: its iid).
	Number int64
	// HeadSHA is the request's head commit.
	HeadSHA string
	// HeadRef is where the target repository keeps the head
	// (refs/pull/N/head; GitLab: refs/merge-requests/N/head).
	HeadRef string
	// Fork says the head lives in another repository than the target (or
	// in one deleted since).
	Fork bool
}

// PullLister lists the open pull requests into a branch. The reporters of
// the three forges implement it.
type PullLister interface {
	// OpenPullRequests returns at most MaxOpenPullRequests requests open
	// into base, and whether there were more (those are left out: the
	// caller says so rather than guessing which are closed).
	OpenPullRequests(ctx context.Context, base string) (prs []OpenPullRequest, truncated bool, err error)
}

// Bounds of a listing: the page size asked for, and the pages read. Each
// answer is also cut at maxResponseBytes (boundedClient).
const (
	pullPageSize = 50
	maxPullPages = 2
	// MaxOpenPullRequests is the most requests one listing returns.
	MaxOpenPullRequests = pullPageSize * maxPullPages
)

// commitSHA is a full SHA-1 or SHA-256 commit ID: a forge's answer that
// names anything else is not believed.
var commitSHA = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// maxPullNumber bounds a request number from a forge's answer (it ends up
// in a path and a ref).
const maxPullNumber = 1 << 40

// pulls collects the valid entries of the pages of a listing.
type pulls struct {
	out       []OpenPullRequest
	truncated bool
}

// add keeps pr when the forge's answer is sane, and reports whether the
// listing has room for more.
func (p *pulls) add(pr OpenPullRequest) bool {
	if len(p.out) == MaxOpenPullRequests {
		p.truncated = true
		return false
	}
	if pr.Number > 0 && pr.Number < maxPullNumber && commitSHA.MatchString(pr.HeadSHA) {
		p.out = append(p.out, pr)
	}
	return true
}

func listError(repo, base string, code int, err error, token string) error {
	msg := fmt.Errorf("list the pull requests open into %s of %s: %s", base, repo, sources.Redact(err.Error(), token))
	return classify(code, msg)
}

func pullRef(n int64) string { return "refs/pull/" + strconv.FormatInt(n, 10) + "/head" }

// OpenPullRequests implements PullLister (GET /repos/{o}/{r}/pulls; Gitea
// does not filter by base branch, so the pages are filtered here).
func (g *Gitea) OpenPullRequests(ctx context.Context, base string) ([]OpenPullRequest, bool, error) {
	tok, err := g.cfg.token(ctx)
	if err != nil {
		return nil, false, err
	}
	client, err := gitea.NewClient(g.cfg.BaseURL,
		gitea.SetHTTPClient(boundedClient(g.cfg.httpClient())),
		gitea.SetToken(tok), gitea.SetContext(ctx), gitea.SetGiteaVersion(""),
	)
	if err != nil {
		return nil, false, listError(g.cfg.Repository, base, 0, err, tok)
	}
	var p pulls
	for page := 1; page <= maxPullPages; page++ {
		list, resp, err := client.ListRepoPullRequests(g.owner, g.name, gitea.ListPullRequestsOptions{
			State: gitea.StateOpen, ListOptions: gitea.ListOptions{Page: page, PageSize: pullPageSize},
		})
		if err != nil {
			code := 0
			if resp != nil {
				code = resp.StatusCode
			}
			return nil, false, listError(g.cfg.Repository, base, code, err, tok)
		}
		for _, pr := range list {
			if pr == nil || pr.Base == nil || pr.Head == nil || pr.Base.Ref != base {
				continue
			}
			fork := pr.Head.Repository == nil || pr.Base.Repository == nil || pr.Head.Repository.ID != pr.Base.Repository.ID
			if !p.add(OpenPullRequest{Number: pr.Index, HeadSHA: pr.Head.Sha, HeadRef: pullRef(pr.Index), Fork: fork}) {
				return p.out, true, nil
			}
		}
		if len(list) < pullPageSize {
			return p.out, false, nil
		}
	}
	return p.out, true, nil
}

// OpenPullRequests implements PullLister
// (GET /repos/{o}/{r}/pulls?state=open&base=BRANCH).
func (g *GitHub) OpenPullRequests(ctx context.Context, base string) ([]OpenPullRequest, bool, error) {
	tok, err := g.cfg.token(ctx)
	if err != nil {
		return nil, false, err
	}
	client := github.NewClient(boundedClient(g.cfg.httpClient())).WithAuthToken(tok)
	if g.base != nil {
		client.BaseURL = g.base
	}
	var p pulls
	for page := 1; page <= maxPullPages; page++ {
		list, resp, err := client.PullRequests.List(ctx, g.owner, g.name, &github.PullRequestListOptions{
			State: "open", Base: base, ListOptions: github.ListOptions{Page: page, PerPage: pullPageSize},
		})
		if err != nil {
			code := 0
			if resp != nil {
				code = resp.StatusCode
			}
			return nil, false, listError(g.cfg.Repository, base, code, err, tok)
		}
		for _, pr := range list {
			if pr == nil || pr.GetBase().GetRef() != base {
				continue
			}
			headRepo, baseRepo := pr.GetHead().GetRepo(), pr.GetBase().GetRepo()
			fork := headRepo == nil || baseRepo == nil || headRepo.GetID() != baseRepo.GetID()
			n := int64(pr.GetNumber())
			if !p.add(OpenPullRequest{Number: n, HeadSHA: pr.GetHead().GetSHA(), HeadRef: pullRef(n), Fork: fork}) {
				return p.out, true, nil
			}
		}
		if len(list) < pullPageSize {
			return p.out, false, nil
		}
	}
	return p.out, true, nil
}

// OpenPullRequests implements PullLister
// (GET /projects/{id}/merge_requests?state=opened&target_branch=BRANCH).
func (g *GitLab) OpenPullRequests(ctx context.Context, base string) ([]OpenPullRequest, bool, error) {
	tok, err := g.cfg.token(ctx)
	if err != nil {
		return nil, false, err
	}
	opts := []gitlab.ClientOptionFunc{gitlab.WithHTTPClient(boundedClient(g.cfg.httpClient())), gitlab.WithoutRetries()}
	if g.cfg.BaseURL != "" {
		opts = append(opts, gitlab.WithBaseURL(g.cfg.BaseURL))
	}
	client, err := gitlab.NewClient(tok, opts...)
	if err != nil {
		return nil, false, listError(g.cfg.Repository, base, 0, err, tok)
	}
	var p pulls
	for page := int64(1); page <= maxPullPages; page++ {
		list, resp, err := client.MergeRequests.ListProjectMergeRequests(g.project, &gitlab.ListProjectMergeRequestsOptions{
			State: gitlab.Ptr("opened"), TargetBranch: gitlab.Ptr(base),
			ListOptions: gitlab.ListOptions{Page: page, PerPage: pullPageSize},
		}, gitlab.WithContext(ctx))
		if err != nil {
			code := 0
			if resp != nil {
				code = resp.StatusCode
			}
			return nil, false, listError(g.cfg.Repository, base, code, err, tok)
		}
		for _, mr := range list {
			if mr == nil || mr.TargetBranch != base {
				continue
			}
			ref := "refs/merge-requests/" + strconv.FormatInt(mr.IID, 10) + "/head"
			if !p.add(OpenPullRequest{Number: mr.IID, HeadSHA: mr.SHA, HeadRef: ref, Fork: mr.SourceProjectID != mr.TargetProjectID}) {
				return p.out, true, nil
			}
		}
		if len(list) < pullPageSize {
			return p.out, false, nil
		}
	}
	return p.out, true, nil
}
