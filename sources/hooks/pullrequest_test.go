package hooks

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	headSHA = "0123456789abcdef0123456789abcdef01234567"
)

func githubPR(action string, headRepo string) []byte {
	return []byte(`{"action":"` + action + `","number":7,"pull_request":{"number":7,` +
		`"head":{"ref":"feature","sha":"` + headSHA + `","repo":{"full_name":"` + headRepo + `"}},` +
		`"base":{"ref":"main","sha":"aaaa","repo":{"full_name":"org/cfg"}}},` +
		`"repository":{"full_name":"org/cfg","clone_url":"https://github.com/org/cfg.git","ssh_url":"git@github.com:org/cfg.git","html_url":"https://github.com/org/cfg"}}`)
}

// giteaPR is the shape Gitea 1.2x sends (modules/structs: PullRequestPayload
// with PRBranchInfo's repo_id).
func giteaPR(action string, headRepoID int) []byte {
	id := "1"
	if headRepoID != 1 {
		id = "2"
	}
	return []byte(`{"action":"` + action + `","number":3,"pull_request":{"number":3,` +
		`"head":{"label":"feature","ref":"feature","sha":"` + headSHA + `","repo_id":` + id + `},` +
		`"base":{"label":"main","ref":"main","sha":"bbbb","repo_id":1}},` +
		`"repository":{"full_name":"org/cfg","clone_url":"http://127.0.0.1:3000/org/cfg.git","ssh_url":"ssh://git@127.0.0.1:2222/org/cfg.git","html_url":"http://127.0.0.1:3000/org/cfg"}}`)
}

func gitlabMR(action string, sourceProject int) []byte {
	src := "10"
	if sourceProject != 10 {
		src = "11"
	}
	return []byte(`{"object_kind":"merge_request","object_attributes":{"iid":5,"action":"` + action + `","target_branch":"main",` +
		`"source_project_id":` + src + `,"target_project_id":10,"last_commit":{"id":"` + strings.ToUpper(headSHA) + `"}},` +
		`"project":{"git_http_url":"https://gitlab.example/g/cfg.git","git_ssh_url":"git@gitlab.example:g/cfg.git","web_url":"https://gitlab.example/g/cfg"}}`)
}

type prRecorder struct {
	mu  sync.Mutex
	prs []PullRequest
}

func (r *prRecorder) add(pr PullRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prs = append(r.prs, pr)
}

func TestPullRequestEvents(t *testing.T) {
	type request struct {
		path    string
		headers map[string]string
		body    []byte
	}
	gh := func(action, headRepo string) request {
		b := githubPR(action, headRepo)
		return request{"/hooks/github", map[string]string{"X-GitHub-Event": "pull_request", "X-Hub-Signature-256": "sha256=" + sign(secret, b)}, b}
	}
	gt := func(eventType, action string, headRepoID int) request {
		b := giteaPR(action, headRepoID)
		return request{"/hooks/gitea", map[string]string{"X-Gitea-Event": "pull_request", "X-Gitea-Event-Type": eventType, "X-Gitea-Signature": sign(secret, b)}, b}
	}
	gl := func(action string, sourceProject int, token string) request {
		return request{"/hooks/gitlab", map[string]string{"X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Token": token}, gitlabMR(action, sourceProject)}
	}
	githubWant := PullRequest{
		Provider: "github", Number: 7, BaseBranch: "main", HeadSHA: headSHA, HeadRef: "refs/pull/7/head",
		RepoURLs: []string{"https://github.com/org/cfg.git", "git@github.com:org/cfg.git", "https://github.com/org/cfg"},
	}
	giteaWant := PullRequest{
		Provider: "gitea", Number: 3, BaseBranch: "main", HeadSHA: headSHA, HeadRef: "refs/pull/3/head",
		RepoURLs: []string{"http://127.0.0.1:3000/org/cfg.git", "ssh://git@127.0.0.1:2222/org/cfg.git", "http://127.0.0.1:3000/org/cfg"},
	}
	gitlabWant := PullRequest{
		Provider: "gitlab", Number: 5, BaseBranch: "main", HeadSHA: headSHA, HeadRef: "refs/merge-requests/5/head",
		RepoURLs: []string{"https://gitlab.example/g/cfg.git", "git@gitlab.example:g/cfg.git", "https://gitlab.example/g/cfg"},
	}
	with := func(pr PullRequest, f func(*PullRequest)) *PullRequest { f(&pr); return &pr }
	tests := []struct {
		name     string
		req      request
		wantCode int
		want     *PullRequest
	}{
		{"github opened", gh("opened", "org/cfg"), http.StatusAccepted, &githubWant},
		{"github synchronize", gh("synchronize", "org/cfg"), http.StatusAccepted, &githubWant},
		{"github reopened from a fork", gh("reopened", "someone/cfg"), http.StatusAccepted, with(githubWant, func(p *PullRequest) { p.Fork = true })},
		{"github closed", gh("closed", "org/cfg"), http.StatusAccepted, with(githubWant, func(p *PullRequest) { p.Closed = true })},
		{"github labeled is ignored", gh("labeled", "org/cfg"), http.StatusNoContent, nil},
		{"gitea opened", gt("pull_request", "opened", 1), http.StatusAccepted, &giteaWant},
		{"gitea sync", gt("pull_request_sync", "synchronized", 1), http.StatusAccepted, &giteaWant},
		{"gitea fork", gt("pull_request", "opened", 2), http.StatusAccepted, with(giteaWant, func(p *PullRequest) { p.Fork = true })},
		{"gitea closed", gt("pull_request", "closed", 1), http.StatusAccepted, with(giteaWant, func(p *PullRequest) { p.Closed = true })},
		{"gitea label change is ignored", gt("pull_request_label", "label_updated", 1), http.StatusNoContent, nil},
		{"gitlab open", gl("open", 10, string(secret)), http.StatusAccepted, &gitlabWant},
		{"gitlab update from a fork", gl("update", 11, string(secret)), http.StatusAccepted, with(gitlabWant, func(p *PullRequest) { p.Fork = true })},
		{"gitlab merge closes", gl("merge", 10, string(secret)), http.StatusAccepted, with(gitlabWant, func(p *PullRequest) { p.Closed = true })},
		{"gitlab approved is ignored", gl("approved", 10, string(secret)), http.StatusNoContent, nil},
		{"gitlab wrong token", gl("open", 10, "nope"), http.StatusUnauthorized, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec prRecorder
			var pushes recorder
			mux := http.NewServeMux()
			RegisterReceivers(mux, Secrets{Gitea: secret, GitHub: secret, GitLab: secret}, Receivers{Push: pushes.trigger, PullRequest: rec.add})
			req := httptest.NewRequest(http.MethodPost, tt.req.path, bytes.NewReader(tt.req.body))
			for k, v := range tt.req.headers {
				req.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, req)
			assert.Equal(t, tt.wantCode, w.Code, w.Body.String())
			assert.Empty(t, pushes.got(), "a pull-request event fetches no source")
			if tt.want == nil {
				assert.Empty(t, rec.prs)
				return
			}
			require.Len(t, rec.prs, 1)
			assert.Equal(t, *tt.want, rec.prs[0])
		})
	}
}

// TestPullRequestEventsRefused: payloads that would make the preview fetch
// another ref or build a bogus one are refused with 400, not acted on.
func TestPullRequestEventsRefused(t *testing.T) {
	for name, body := range map[string]string{
		"sha with a ref in it": `{"action":"opened","number":7,"pull_request":{"head":{"sha":"refs/heads/main"},"base":{"ref":"main"}},"repository":{"clone_url":"https://github.com/org/cfg.git"}}`,
		"negative number":      `{"action":"opened","number":-1,"pull_request":{"head":{"sha":"` + headSHA + `"},"base":{"ref":"main"}},"repository":{"clone_url":"https://github.com/org/cfg.git"}}`,
		"no target branch":     `{"action":"opened","number":7,"pull_request":{"head":{"sha":"` + headSHA + `"},"base":{"ref":""}},"repository":{"clone_url":"https://github.com/org/cfg.git"}}`,
		"branch with a colon":  `{"action":"opened","number":7,"pull_request":{"head":{"sha":"` + headSHA + `"},"base":{"ref":"a:b"}},"repository":{"clone_url":"https://github.com/org/cfg.git"}}`,
		"not JSON":             `{"action":`,
	} {
		t.Run(name, func(t *testing.T) {
			var rec prRecorder
			h := gitHub(secret, Receivers{Push: func([]string, string) {}, PullRequest: rec.add})
			req := httptest.NewRequest(http.MethodPost, "/hooks/github", strings.NewReader(body))
			req.Header.Set("X-GitHub-Event", "pull_request")
			req.Header.Set("X-Hub-Signature-256", "sha256="+sign(secret, []byte(body)))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			assert.Equal(t, http.StatusBadRequest, w.Code)
			assert.Empty(t, rec.prs)
		})
	}
}

// TestPullRequestEventsWithoutReceiver: a home that does not preview
// acknowledges pull-request events and acts on none.
func TestPullRequestEventsWithoutReceiver(t *testing.T) {
	var pushes recorder
	b := githubPR("opened", "org/cfg")
	req := httptest.NewRequest(http.MethodPost, "/hooks/github", bytes.NewReader(b))
	req.Header.Set("X-GitHub-Event", "pull_request")
	req.Header.Set("X-Hub-Signature-256", "sha256="+sign(secret, b))
	w := httptest.NewRecorder()
	GitHub(secret, pushes.trigger).ServeHTTP(w, req)
	assert.Equal(t, http.StatusNoContent, w.Code)
	assert.Empty(t, pushes.got())
}

// TestForkDetection reads the forges' own payload shapes (testdata/
// pullrequest, trimmed from real deliveries): a head in another repository
// is a fork on each forge, however the forge says it, and a head in the
// target repository is not, even when that repository is itself a fork.
func TestForkDetection(t *testing.T) {
	tests := []struct {
		file    string
		headers map[string]string
		number  int64
		closed  bool
		fork    bool
	}{
		// GitHub: head.repo differs from base.repo.
		{"github-fork-opened.json", map[string]string{"X-GitHub-Event": "pull_request"}, 12, false, true},
		// head.repo.fork is about the repository, not the request: a
		// branch of a forked origin is no fork request.
		{"github-forked-origin-same-repo.json", map[string]string{"X-GitHub-Event": "pull_request"}, 13, false, false},
		// The fork was deleted: head.repo is null; the safe side.
		{"github-fork-deleted-closed.json", map[string]string{"X-GitHub-Event": "pull_request"}, 14, true, true},
		// Gitea: head.repo_id differs from base.repo_id.
		{"gitea-fork-opened.json", map[string]string{"X-Gitea-Event": "pull_request", "X-Gitea-Event-Type": "pull_request"}, 3, false, true},
		{"gitea-same-repo-synchronized.json", map[string]string{"X-Gitea-Event": "pull_request", "X-Gitea-Event-Type": "pull_request_sync"}, 4, false, false},
		// GitLab: source_project_id differs from target_project_id.
		{"gitlab-fork-open.json", map[string]string{"X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Token": string(secret)}, 5, false, true},
		{"gitlab-same-project-update.json", map[string]string{"X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Token": string(secret)}, 6, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", "pullrequest", tt.file))
			require.NoError(t, err)
			path := "/hooks/" + strings.SplitN(tt.file, "-", 2)[0]
			req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			switch {
			case tt.headers["X-GitHub-Event"] != "":
				req.Header.Set("X-Hub-Signature-256", "sha256="+sign(secret, body))
			case tt.headers["X-Gitea-Event"] != "":
				req.Header.Set("X-Gitea-Signature", sign(secret, body))
			}
			var rec prRecorder
			mux := http.NewServeMux()
			RegisterReceivers(mux, Secrets{Gitea: secret, GitHub: secret, GitLab: secret}, Receivers{Push: func([]string, string) {}, PullRequest: rec.add})
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, req)
			require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
			require.Len(t, rec.prs, 1)
			pr := rec.prs[0]
			assert.Equal(t, tt.number, pr.Number)
			assert.Equal(t, tt.closed, pr.Closed)
			assert.Equal(t, tt.fork, pr.Fork, "fork")
			assert.Equal(t, "main", pr.BaseBranch)
			assert.Contains(t, pr.RepoURLs[0], "platform/envoy-config", "the target repository, never the fork's")
		})
	}
}
