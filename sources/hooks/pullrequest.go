package hooks

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// PullRequest is one verified pull-request (merge-request) event that
// legate acts on: the request was opened, its head moved, or it was closed.
type PullRequest struct {
	// Provider is "gitea", "github" or "gitlab".
	Provider string
	// Number is the forge's number of the request (GitLab: the iid).
	Number int64
	// Closed is true when the request was closed or merged: its preview
	// is dropped.
	Closed bool
	// RepoURLs are the forms of the target (base) repository's URL the
	// payload gives, matched against the sources' URLs as pushes are.
	RepoURLs []string
	// BaseBranch is the short name of the target branch ("main").
	BaseBranch string
	// HeadSHA is the full commit SHA of the request's head.
	HeadSHA string
	// HeadRef is the ref the target repository keeps the head under
	// (refs/pull/N/head on GitHub and Gitea, refs/merge-requests/N/head on
	// GitLab): a fork's commits are fetched from the target repository.
	HeadRef string
	// Fork says that the head lives in another repository than the base:
	// the preview never reads key material for it.
	Fork bool
}

// PRTrigger is called once per pull-request event legate acts on. It must
// not block.
type PRTrigger func(PullRequest)

// maxPRNumber bounds a request number; forges count far below it.
const maxPRNumber = 1 << 40

// validPR checks what a preview builds refs and URLs from, so that a
// hostile payload cannot name another ref or an absurd number.
func validPR(pr PullRequest) error {
	if pr.Number <= 0 || pr.Number > maxPRNumber {
		return fmt.Errorf("pull request number %d is out of range", pr.Number)
	}
	if pr.BaseBranch == "" || len(pr.BaseBranch) > 255 || strings.ContainsAny(pr.BaseBranch, " \t\r\n\x00~^:?*[\\") {
		return fmt.Errorf("pull request %d: target branch %q is not a branch name", pr.Number, pr.BaseBranch)
	}
	if !pr.Closed && !isHexSHA(pr.HeadSHA) {
		return fmt.Errorf("pull request %d: head sha %q is not a full commit SHA", pr.Number, pr.HeadSHA)
	}
	return nil
}

func isHexSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

// githubStylePR is the pull_request payload GitHub defines and Gitea
// mirrors.
type githubStylePR struct {
	Action      string `json:"action"`
	Number      int64  `json:"number"`
	PullRequest struct {
		Head struct {
			SHA    string `json:"sha"`
			RepoID int64  `json:"repo_id"` // Gitea only
			Repo   *struct {
				ID       int64  `json:"id"`
				FullName string `json:"full_name"`
			} `json:"repo"`
		} `json:"head"`
		Base struct {
			Ref    string `json:"ref"`
			RepoID int64  `json:"repo_id"` // Gitea only
			Repo   *struct {
				ID       int64  `json:"id"`
				FullName string `json:"full_name"`
			} `json:"repo"`
		} `json:"base"`
	} `json:"pull_request"`
	Repository struct {
		FullName string `json:"full_name"`
		CloneURL string `json:"clone_url"`
		SSHURL   string `json:"ssh_url"`
		GitURL   string `json:"git_url"` // GitHub only
		HTMLURL  string `json:"html_url"`
	} `json:"repository"`
}

// githubStyleActions maps the actions legate acts on to whether they
// close the request; GitHub says "synchronize" and Gitea "synchronized"
// for a push to the head.
var githubStyleActions = map[string]bool{
	"opened": false, "reopened": false, "synchronize": false, "synchronized": false,
	"closed": true,
}

func parseGitHubStylePR(provider string, body []byte) (PullRequest, bool, error) {
	var p githubStylePR
	if err := decode(body, &p); err != nil {
		return PullRequest{}, false, err
	}
	closed, ok := githubStyleActions[p.Action]
	if !ok {
		return PullRequest{}, false, nil
	}
	head, base := p.PullRequest.Head, p.PullRequest.Base
	// A fork is a head in another repository than the base, whatever the
	// repositories are: head.repo.fork only says the head's repository is
	// a fork of something, which a branch of a forked origin also is.
	fork := head.RepoID != base.RepoID
	if head.Repo != nil && base.Repo != nil {
		fork = fork || head.Repo.ID != base.Repo.ID || !strings.EqualFold(head.Repo.FullName, base.Repo.FullName)
	} else if head.Repo == nil && head.RepoID == 0 {
		// A head whose repository was deleted: treat it as a fork, the
		// safe side.
		fork = true
	}
	rp := p.Repository
	pr := PullRequest{
		Provider: provider, Number: p.Number, Closed: closed,
		RepoURLs:   []string{rp.CloneURL, rp.SSHURL, rp.GitURL, rp.HTMLURL},
		BaseBranch: strings.TrimPrefix(base.Ref, "refs/heads/"),
		HeadSHA:    strings.ToLower(head.SHA),
		HeadRef:    "refs/pull/" + strconv.FormatInt(p.Number, 10) + "/head",
		Fork:       fork,
	}
	if err := validPR(pr); err != nil {
		return PullRequest{}, false, err
	}
	return pr, true, nil
}

// giteaPullRequest reads Gitea's pull_request events. Gitea sends
// X-Gitea-Event "pull_request" for every pull-request event type and
// names the type in X-Gitea-Event-Type: "pull_request" (opened, closed,
// reopened, edited) and "pull_request_sync" (a push to the head, action
// "synchronized"); assignment, label and milestone changes are ignored.
func giteaPullRequest(r *http.Request, body []byte) (PullRequest, bool, error) {
	if r.Header.Get("X-Gitea-Event") != "pull_request" {
		return PullRequest{}, false, nil
	}
	switch r.Header.Get("X-Gitea-Event-Type") {
	case "", "pull_request", "pull_request_sync":
	default:
		return PullRequest{}, false, nil
	}
	return parseGitHubStylePR("gitea", body)
}

// githubPullRequest reads GitHub's pull_request events.
func githubPullRequest(r *http.Request, body []byte) (PullRequest, bool, error) {
	if r.Header.Get("X-GitHub-Event") != "pull_request" {
		return PullRequest{}, false, nil
	}
	return parseGitHubStylePR("github", body)
}

// gitlabMergeRequest reads GitLab's Merge Request Hook. An "update"
// without a new head (a title edit) reaches the preview queue too, which
// renders a head it has already rendered only once.
func gitlabMergeRequest(r *http.Request, body []byte) (PullRequest, bool, error) {
	if r.Header.Get("X-Gitlab-Event") != "Merge Request Hook" {
		return PullRequest{}, false, nil
	}
	var p struct {
		Attrs struct {
			IID             int64  `json:"iid"`
			Action          string `json:"action"`
			TargetBranch    string `json:"target_branch"`
			SourceProjectID int64  `json:"source_project_id"`
			TargetProjectID int64  `json:"target_project_id"`
			LastCommit      struct {
				ID string `json:"id"`
			} `json:"last_commit"`
		} `json:"object_attributes"`
		Project struct {
			HTTPURL string `json:"git_http_url"`
			SSHURL  string `json:"git_ssh_url"`
			WebURL  string `json:"web_url"`
		} `json:"project"`
	}
	if err := decode(body, &p); err != nil {
		return PullRequest{}, false, err
	}
	a := p.Attrs
	var closed bool
	switch a.Action {
	case "open", "reopen", "update":
	case "close", "merge":
		closed = true
	default:
		return PullRequest{}, false, nil
	}
	pr := PullRequest{
		Provider: "gitlab", Number: a.IID, Closed: closed,
		RepoURLs:   []string{p.Project.HTTPURL, p.Project.SSHURL, p.Project.WebURL},
		BaseBranch: a.TargetBranch,
		HeadSHA:    strings.ToLower(a.LastCommit.ID),
		HeadRef:    "refs/merge-requests/" + strconv.FormatInt(a.IID, 10) + "/head",
		// A payload without the projects' IDs counts as a fork: the
		// safe side.
		Fork: a.SourceProjectID != a.TargetProjectID || a.SourceProjectID == 0,
	}
	if err := validPR(pr); err != nil {
		return PullRequest{}, false, err
	}
	return pr, true, nil
}
