package hooks

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	before = "1111111111111111111111111111111111111111"
	after  = "2222222222222222222222222222222222222222"
	repo   = `"repository":{"clone_url":"https://git.example/org/mono.git"}`
	commit = `{"added":["edge/new.yaml"],"removed":["docs/old.md"],"modified":["edge/routes.yaml","core/x.yaml"]}`
)

// What each forge's push says about the paths it touched, and every case
// where it cannot say (then nil: every source is fetched).
func TestChangedPathsFromPushes(t *testing.T) {
	all := []string{"edge/new.yaml", "docs/old.md", "edge/routes.yaml", "core/x.yaml"}
	tests := []struct {
		name, path string
		headers    map[string]string
		body       string
		want       []string
	}{
		{
			"github", "/hooks/github",
			map[string]string{"X-GitHub-Event": "push"},
			`{"ref":"refs/heads/main","before":"` + before + `","after":"` + after + `",` + repo + `,"commits":[` + commit + `,` + commit + `]}`, all,
		},
		{
			"github force push", "/hooks/github",
			map[string]string{"X-GitHub-Event": "push"},
			`{"ref":"refs/heads/main","forced":true,"before":"` + before + `","after":"` + after + `",` + repo + `,"commits":[` + commit + `]}`, nil,
		},
		{
			"github new branch", "/hooks/github",
			map[string]string{"X-GitHub-Event": "push"},
			`{"ref":"refs/heads/x","created":true,"before":"` + zeroSHA + `","after":"` + after + `",` + repo + `,"commits":[` + commit + `]}`, nil,
		},
		{
			"github tag", "/hooks/github",
			map[string]string{"X-GitHub-Event": "push"},
			`{"ref":"refs/tags/v1","before":"` + before + `","after":"` + after + `",` + repo + `,"commits":[` + commit + `]}`, nil,
		},
		{
			"github no commits listed", "/hooks/github",
			map[string]string{"X-GitHub-Event": "push"},
			`{"ref":"refs/heads/main","before":"` + before + `","after":"` + after + `",` + repo + `,"commits":[]}`, nil,
		},
		{
			"gitea all commits listed", "/hooks/gitea",
			map[string]string{"X-Gitea-Event": "push"},
			`{"ref":"refs/heads/main","before":"` + before + `","after":"` + after + `",` + repo + `,"total_commits":1,"commits":[` + commit + `]}`, all,
		},
		{
			"gitea more commits than listed", "/hooks/gitea",
			map[string]string{"X-Gitea-Event": "push"},
			`{"ref":"refs/heads/main","before":"` + before + `","after":"` + after + `",` + repo + `,"total_commits":16,"commits":[` + commit + `]}`, nil,
		},
		{
			"gitlab", "/hooks/gitlab",
			map[string]string{"X-Gitlab-Event": "Push Hook"},
			`{"ref":"refs/heads/main","before":"` + before + `","after":"` + after + `","project":{"git_http_url":"https://git.example/org/mono.git"},"total_commits_count":1,"commits":[` + commit + `]}`, all,
		},
		{
			"gitlab more commits than listed", "/hooks/gitlab",
			map[string]string{"X-Gitlab-Event": "Push Hook"},
			`{"ref":"refs/heads/main","before":"` + before + `","after":"` + after + `","project":{"git_http_url":"https://git.example/org/mono.git"},"total_commits_count":21,"commits":[` + commit + `]}`, nil,
		},
		{
			"gitlab deleted branch", "/hooks/gitlab",
			map[string]string{"X-Gitlab-Event": "Push Hook"},
			`{"ref":"refs/heads/main","before":"` + before + `","after":"` + zeroSHA + `","project":{"git_http_url":"https://git.example/org/mono.git"},"total_commits_count":0,"commits":[]}`, nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			called := 0
			mux := http.NewServeMux()
			RegisterReceivers(mux, Secrets{Gitea: secret, GitHub: secret, GitLab: secret}, Receivers{
				Push:    func([]string, string) { t.Fatal("a forge push goes to Changed when it is set") },
				Changed: func(_ []string, _ string, changed []string) { called++; got = changed },
			})
			srv := httptest.NewServer(mux)
			defer srv.Close()
			body := []byte(tt.body)
			req, err := http.NewRequest(http.MethodPost, srv.URL+tt.path, bytes.NewReader(body))
			require.NoError(t, err)
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			req.Header.Set("X-Hub-Signature-256", "sha256="+sign(secret, body))
			req.Header.Set("X-Gitea-Signature", sign(secret, body))
			req.Header.Set("X-Gitlab-Token", string(secret))
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
			require.Equal(t, http.StatusAccepted, resp.StatusCode)
			require.Equal(t, 1, called)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestChangedPathsAreBounded(t *testing.T) {
	c := payloadCommit{}
	for i := range maxChangedPaths {
		c.Added = append(c.Added, "f/"+strconv.Itoa(i))
	}
	assert.Len(t, changedPaths([]payloadCommit{c}, true), maxChangedPaths, "up to the bound, every path")
	c.Added = append(c.Added, "one/more")
	assert.Nil(t, changedPaths([]payloadCommit{c}, true), "past the bound: unknown, every source fetched")
}

// A monorepo: only the sources whose directory a push touched are
// fetched; an unknown set of paths fetches them all.
func TestWatcherTriggersChangedDirectories(t *testing.T) {
	var w Watcher
	got := map[string]int{}
	w.WatchDir("https://git.example/org/mono.git", "edge", func() { got["edge"]++ })
	w.WatchDir("https://git.example/org/mono.git", "./core/", func() { got["core"]++ })
	w.WatchDir("https://git.example/org/mono.git", "edge-canary", func() { got["edge-canary"]++ })
	w.Watch("https://git.example/org/mono.git", func() { got["root"]++ })
	w.Watch("https://git.example/org/other.git", func() { got["other"]++ })
	urls := []string{"https://git.example/org/mono"}

	called, skipped := w.TriggerChanged(urls, "refs/heads/main", []string{"edge/routes.yaml", "docs/x.md"})
	assert.Equal(t, map[string]int{"edge": 1, "root": 1}, got)
	assert.Equal(t, 2, called)
	assert.Equal(t, 2, skipped)

	_, _ = w.TriggerChanged(urls, "refs/heads/main", []string{"core"})
	assert.Equal(t, map[string]int{"edge": 1, "core": 1, "root": 2}, got, "a path equal to the directory (a file or submodule replaced) counts")

	_, _ = w.TriggerChanged(urls, "refs/heads/main", []string{"edge-canary/routes.yaml"})
	assert.Equal(t, map[string]int{"edge": 1, "core": 1, "edge-canary": 1, "root": 3}, got, "edge-canary/ is not under edge/")

	called, skipped = w.TriggerChanged(urls, "refs/heads/main", nil)
	assert.Equal(t, map[string]int{"edge": 2, "core": 2, "edge-canary": 2, "root": 4}, got)
	assert.Equal(t, 4, called)
	assert.Zero(t, skipped)

	called, _ = w.TriggerChanged(urls, "refs/heads/main", []string{})
	assert.Equal(t, 1, called, "a push that touched nothing fetches only the whole-repository source")
}
