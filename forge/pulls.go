package forge

import (
	"context"
	"fmt"
	"net/http"
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

// walkPulls reads the pages of one forge's listing of the requests open
// into base: page fetches page n (1-based) with the HTTP status of its
// answer (0 when there was none), entry turns one listed item into a
// request into base (false: not one). It stops at a short page, at
// maxPullPages or when MaxOpenPullRequests are kept, and reports whether
// requests were left out.
func walkPulls[T any](repo, base, token string, page func(n int) ([]T, int, error), entry func(T) (OpenPullRequest, bool)) ([]OpenPullRequest, bool, error) {
	var p pulls
	for n := 1; n <= maxPullPages; n++ {
		list, code, err := page(n)
		if err != nil {
			return nil, false, listError(repo, base, code, err, token)
		}
		for _, item := range list {
			pr, ok := entry(item)
			if !ok {
				continue
			}
			if !p.add(pr) {
				return p.out, true, nil
			}
		}
		if len(list) < pullPageSize {
			return p.out, false, nil
		}
	}
	return p.out, true, nil
}

// statusOf is the HTTP status of an SDK's answer, 0 without one.
func statusOf(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

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
	return walkPulls(g.cfg.Repository, base, tok, func(n int) ([]*gitea.PullRequest, int, error) {
		list, resp, err := client.ListRepoPullRequests(g.owner, g.name, gitea.ListPullRequestsOptions{
			State: gitea.StateOpen, ListOptions: gitea.ListOptions{Page: n, PageSize: pullPageSize},
		})
		if resp == nil {
			return list, 0, err
		}
		return list, statusOf(resp.Response), err
	}, func(pr *gitea.PullRequest) (OpenPullRequest, bool) {
		if pr == nil || pr.Base == nil || pr.Head == nil || pr.Base.Ref != base {
			return OpenPullRequest{}, false
		}
		fork := pr.Head.Repository == nil || pr.Base.Repository == nil || pr.Head.Repository.ID != pr.Base.Repository.ID
		return OpenPullRequest{Number: pr.Index, HeadSHA: pr.Head.Sha, HeadRef: pullRef(pr.Index), Fork: fork}, true
	})
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
	return walkPulls(g.cfg.Repository, base, tok, func(n int) ([]*github.PullRequest, int, error) {
		list, resp, err := client.PullRequests.List(ctx, g.owner, g.name, &github.PullRequestListOptions{
			State: "open", Base: base, ListOptions: github.ListOptions{Page: n, PerPage: pullPageSize},
		})
		if resp == nil {
			return list, 0, err
		}
		return list, statusOf(resp.Response), err
	}, func(pr *github.PullRequest) (OpenPullRequest, bool) {
		if pr == nil || pr.GetBase().GetRef() != base {
			return OpenPullRequest{}, false
		}
		headRepo, baseRepo := pr.GetHead().GetRepo(), pr.GetBase().GetRepo()
		fork := headRepo == nil || baseRepo == nil || headRepo.GetID() != baseRepo.GetID()
		n := int64(pr.GetNumber())
		return OpenPullRequest{Number: n, HeadSHA: pr.GetHead().GetSHA(), HeadRef: pullRef(n), Fork: fork}, true
	})
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
	return walkPulls(g.cfg.Repository, base, tok, func(n int) ([]*gitlab.BasicMergeRequest, int, error) {
		list, resp, err := client.MergeRequests.ListProjectMergeRequests(g.project, &gitlab.ListProjectMergeRequestsOptions{
			State: gitlab.Ptr("opened"), TargetBranch: gitlab.Ptr(base),
			ListOptions: gitlab.ListOptions{Page: int64(n), PerPage: pullPageSize},
		}, gitlab.WithContext(ctx))
		if resp == nil {
			return list, 0, err
		}
		return list, statusOf(resp.Response), err
	}, func(mr *gitlab.BasicMergeRequest) (OpenPullRequest, bool) {
		if mr == nil || mr.TargetBranch != base {
			return OpenPullRequest{}, false
		}
		ref := "refs/merge-requests/" + strconv.FormatInt(mr.IID, 10) + "/head"
		return OpenPullRequest{Number: mr.IID, HeadSHA: mr.SHA, HeadRef: ref, Fork: mr.SourceProjectID != mr.TargetProjectID}, true
	})
}
