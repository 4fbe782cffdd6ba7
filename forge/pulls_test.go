package forge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakePulls answers the three forges' listings of open pull requests
// from one list: number -> (base branch, head SHA, fork).
type fakePull struct {
	number int64
	base   string
	sha    string
	fork   bool
}

func shaOf(n int64) string { return fmt.Sprintf("%040x", n) }

// fakeForge serves pulls as Gitea (/api/v1/repos/o/r/pulls), GitHub
// (/api/v3/repos/o/r/pulls) and GitLab (/api/v4/projects/o%2Fr/merge_requests)
// list them, paginated; tokens counts the requests that carried token.
func fakeForge(t *testing.T, token string, pulls []fakePull, tokens *atomic.Int32) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization") + r.Header.Get("Private-Token")
		if !strings.Contains(auth, token) {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = fmt.Fprintf(w, `{"message":"bad credentials %s"}`, auth)
			return
		}
		tokens.Add(1)
		q := r.URL.Query()
		page, _ := strconv.Atoi(q.Get("page"))
		size, _ := strconv.Atoi(q.Get("limit") + q.Get("per_page"))
		page = max(page, 1)
		want := q.Get("base") + q.Get("target_branch") // Gitea filters nothing
		var sel []fakePull
		for _, p := range pulls {
			if want == "" || p.base == want {
				sel = append(sel, p)
			}
		}
		from, to := min((page-1)*size, len(sel)), min(page*size, len(sel))
		var out []any
		for _, p := range sel[from:to] {
			headRepo := map[string]any{"id": 1, "full_name": "o/r"}
			if p.fork {
				headRepo = map[string]any{"id": 2, "full_name": "someone/r"}
			}
			switch {
			case strings.HasPrefix(r.URL.Path, "/api/v4/"):
				src := 1
				if p.fork {
					src = 2
				}
				out = append(out, map[string]any{"iid": p.number, "sha": p.sha, "target_branch": p.base, "source_project_id": src, "target_project_id": 1})
			default:
				out = append(out, map[string]any{
					"number": p.number,
					"base":   map[string]any{"ref": p.base, "repo": map[string]any{"id": 1, "full_name": "o/r"}},
					"head":   map[string]any{"sha": p.sha, "repo": headRepo},
				})
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func listers(t *testing.T, base, token string) map[Provider]PullLister {
	t.Helper()
	tok := func(context.Context) (string, error) { return token, nil }
	out := map[Provider]PullLister{}
	for p, u := range map[Provider]string{ProviderGitea: base, ProviderGitHub: base + "/api/v3/", ProviderGitLab: base + "/api/v4"} {
		rep, err := New(p, Config{BaseURL: u, Repository: "o/r", Token: tok})
		require.NoError(t, err)
		l, ok := rep.(PullLister)
		require.True(t, ok, p)
		out[p] = l
	}
	return out
}

// Each forge's open requests into the branch: others' branches, answers
// that name no full commit SHA or an impossible number are left out, and
// a head from another repository is a fork.
func TestOpenPullRequests(t *testing.T) {
	var seen atomic.Int32
	srv := fakeForge(t, "s3cret-token", []fakePull{
		{number: 1, base: "main", sha: shaOf(1)},
		{number: 2, base: "other", sha: shaOf(2)},
		{number: 3, base: "main", sha: shaOf(3), fork: true},
		{number: 4, base: "main", sha: "not-a-sha"},
		{number: -5, base: "main", sha: shaOf(5)},
	}, &seen)
	for p, l := range listers(t, srv.URL, "s3cret-token") {
		got, truncated, err := l.OpenPullRequests(context.Background(), "main")
		require.NoError(t, err, p)
		assert.False(t, truncated, p)
		ref := func(n int64) string { return fmt.Sprintf("refs/pull/%d/head", n) }
		if p == ProviderGitLab {
			ref = func(n int64) string { return fmt.Sprintf("refs/merge-requests/%d/head", n) }
		}
		assert.Equal(t, []OpenPullRequest{
			{Number: 1, HeadSHA: shaOf(1), HeadRef: ref(1)},
			{Number: 3, HeadSHA: shaOf(3), HeadRef: ref(3), Fork: true},
		}, got, p)
	}
	assert.Positive(t, seen.Load())
}

// A listing reads at most two pages and MaxOpenPullRequests requests, and
// says when there were more.
func TestOpenPullRequestsBounded(t *testing.T) {
	var pulls []fakePull
	for n := range int64(500) {
		pulls = append(pulls, fakePull{number: n + 1, base: "main", sha: shaOf(n + 1)})
	}
	var seen atomic.Int32
	srv := fakeForge(t, "tok", pulls, &seen)
	for p, l := range listers(t, srv.URL, "tok") {
		seen.Store(0)
		got, truncated, err := l.OpenPullRequests(context.Background(), "main")
		require.NoError(t, err, p)
		assert.True(t, truncated, p)
		assert.Len(t, got, 100, p)
		assert.LessOrEqual(t, seen.Load(), int32(2), "%s: two pages of 50", p)
	}
}

// An answer larger than legate reads is refused, not held.
func TestOpenPullRequestsAnswerBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("["))
		chunk := []byte(strings.Repeat(" ", 1<<20))
		for range 9 {
			_, _ = w.Write(chunk)
		}
		_, _ = w.Write([]byte("]"))
	}))
	t.Cleanup(srv.Close)
	for p, l := range listers(t, srv.URL, "tok") {
		_, _, err := l.OpenPullRequests(context.Background(), "main")
		require.Error(t, err, p)
		assert.Contains(t, err.Error(), "larger than legate reads", p)
	}
}

// A refused token never appears in the error, even when the forge
// echoes it.
func TestOpenPullRequestsErrorsHoldNoToken(t *testing.T) {
	var seen atomic.Int32
	srv := fakeForge(t, "the-right-one", nil, &seen)
	for p, l := range listers(t, srv.URL, "wr0ng-t0ken-value") {
		_, _, err := l.OpenPullRequests(context.Background(), "main")
		require.Error(t, err, p)
		assert.NotContains(t, err.Error(), "wr0ng-t0ken-value", p)
		assert.Contains(t, err.Error(), "list the pull requests open into main of o/r", p)
	}
}
