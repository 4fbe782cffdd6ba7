package gitea

import (
	"net/http"
	"testing"
	"time"
)

// CommitStatus is one commit status as Gitea's API returns it.
type CommitStatus struct {
	State       string `json:"status"`
	Context     string `json:"context"`
	Description string `json:"description"`
	TargetURL   string `json:"target_url"`
}

// Statuses lists every status posted on sha, newest first.
func (s *Server) Statuses(t testing.TB, repo *Repository, sha string) []CommitStatus {
	t.Helper()
	var out []CommitStatus
	if err := s.API(http.MethodGet, "api/v1/repos/"+repo.FullName+"/statuses/"+sha+"?limit=50", nil, &out); err != nil {
		t.Fatalf("list the statuses of %s: %v", sha, err)
	}
	return out
}

// LatestStatus is the newest status of context on sha (zero when none).
func (s *Server) LatestStatus(repo *Repository, sha, context string) CommitStatus {
	var combined struct {
		Statuses []CommitStatus `json:"statuses"`
	}
	if err := s.API(http.MethodGet, "api/v1/repos/"+repo.FullName+"/commits/"+sha+"/status", nil, &combined); err != nil {
		return CommitStatus{}
	}
	for _, st := range combined.Statuses {
		if st.Context == context {
			return st
		}
	}
	return CommitStatus{}
}

// WaitStatus waits at most wait until the newest status of context on
// sha has state, and returns it.
func (s *Server) WaitStatus(t testing.TB, repo *Repository, sha, context, state string, wait time.Duration) CommitStatus {
	t.Helper()
	var got CommitStatus
	deadline := time.Now().Add(wait)
	for {
		if got = s.LatestStatus(repo, sha, context); got.State == state {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("commit %s never got %s status %q (last: %+v)", sha, context, state, got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
