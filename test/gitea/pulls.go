package gitea

import (
	"fmt"
	"net/http"
)

// PullRequest is what the tests read of a Gitea pull request.
type PullRequest struct {
	Number int64  `json:"number"`
	State  string `json:"state"`
	Head   struct {
		Sha string `json:"sha"`
	} `json:"head"`
}

// OpenPullRequest opens a pull request of branch head into base.
func (s *Server) OpenPullRequest(repo *Repository, head, base, title string) PullRequest {
	s.t.Helper()
	var pr PullRequest
	body := map[string]any{"head": head, "base": base, "title": title}
	if err := s.API(http.MethodPost, "api/v1/repos/"+repo.FullName+"/pulls", body, &pr); err != nil {
		s.t.Fatalf("open pull request %s into %s on %s: %v", head, base, repo.FullName, err)
	}
	return pr
}

// ClosePullRequest closes pull request n without merging it.
func (s *Server) ClosePullRequest(repo *Repository, n int64) {
	s.t.Helper()
	if err := s.API(http.MethodPatch, fmt.Sprintf("api/v1/repos/%s/pulls/%d", repo.FullName, n), map[string]any{"state": "closed"}, nil); err != nil {
		s.t.Fatalf("close pull request %d on %s: %v", n, repo.FullName, err)
	}
}

// Comment is a comment on an issue or pull request.
type Comment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
}

// Comments lists the comments on issue or pull request n, oldest first.
func (s *Server) Comments(repo *Repository, n int64) ([]Comment, error) {
	var out []Comment
	err := s.API(http.MethodGet, fmt.Sprintf("api/v1/repos/%s/issues/%d/comments", repo.FullName, n), nil, &out)
	return out, err
}

// AddComment posts a comment on issue or pull request n as the admin.
func (s *Server) AddComment(repo *Repository, n int64, body string) {
	s.t.Helper()
	if err := s.API(http.MethodPost, fmt.Sprintf("api/v1/repos/%s/issues/%d/comments", repo.FullName, n), map[string]any{"body": body}, nil); err != nil {
		s.t.Fatalf("comment on %d of %s: %v", n, repo.FullName, err)
	}
}
