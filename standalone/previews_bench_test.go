package standalone

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/preview/prs"
	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/test/gitea"
)

// BenchmarkPullRequestFeedback measures, on a real Gitea in one run, the
// time from a push to a pull request's branch until its legate/preview
// status and its edited comment are on Gitea, against the time from a push
// to the served branch until that commit's first commit status (the node's
// pending: published, waiting for proxies) is. Both go through Gitea's
// signed webhooks; the figures include Gitea's own webhook delay.
//
//	LEGATE_GITEA=$PWD/bin/gitea LEGATE_GITEA_ROOT="$(cat bin/gitea.root)" \
//	  go test ./standalone/ -run '^$' -bench PullRequestFeedback -benchtime 30x
func BenchmarkPullRequestFeedback(b *testing.B) {
	srv := gitea.Start(b, gitea.Options{})
	repo := srv.CreateRepo("preview-bench")
	secrets := b.TempDir()
	tokenFile := filepath.Join(secrets, "token")
	require.NoError(b, os.WriteFile(tokenFile, []byte(srv.Token), 0o600))
	hookFile := filepath.Join(secrets, "hook")
	require.NoError(b, os.WriteFile(hookFile, []byte("bench-hook-secret"), 0o600))

	w := giteaWork{t: b, dir: b.TempDir(), push: srv.PushURL(repo)}
	w.git("init", "-q", "-b", "main")
	w.commit("main", "base", map[string]string{
		"nodes/edge/clusters.yaml": previewClusters("1s", "api"),
		"nodes/edge/listener.yaml": previewListener("api"),
		"nodes/east/clusters.yaml": previewClusters("1s", "api"),
	})
	logs := &phaseLog{}
	s, err := New(serveconfig.Config{
		XDSAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", StateDir: b.TempDir(),
		Sources: []serveconfig.SourceConfig{{
			Name: "cfg", Interval: serveconfig.Duration{Duration: time.Hour},
			Git:      &serveconfig.GitSource{URL: repo.CloneURL, Branch: "main", Auth: &serveconfig.GitAuth{Username: gitea.AdminUser, Password: sources.Secret{File: tokenFile}}},
			Forge:    &serveconfig.ForgeConfig{Provider: forge.ProviderGitea, Token: sources.Secret{File: tokenFile}},
			Previews: &serveconfig.PreviewsConfig{Enabled: true},
		}},
		Webhooks: serveconfig.WebhookConfig{Gitea: sources.Secret{File: hookFile}},
	}, Options{Log: funcr.New(logs.add, funcr.Options{Verbosity: 1})})
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	b.Cleanup(func() { cancel(); require.NoError(b, <-done) })
	require.Eventually(b, func() bool { return len(s.engine.Nodes()) == 2 }, time.Minute, 10*time.Millisecond)
	require.NoError(b, srv.API(http.MethodPost, "api/v1/repos/"+repo.FullName+"/hooks", map[string]any{
		"type": "gitea", "active": true, "events": []string{"push", "pull_request"},
		"config": map[string]string{"url": "http://" + s.HTTPAddr() + "/hooks/gitea", "content_type": "json", "secret": "bench-hook-secret"},
	}, nil))

	w.git("checkout", "-q", "-b", "change")
	head := w.commit("change", "first", map[string]string{"nodes/edge/clusters.yaml": previewClusters("2s", "api")})
	pr := srv.OpenPullRequest(repo, "change", "main", "bench")
	waitFor := func(what string, ok func() bool) {
		require.Eventually(b, ok, 2*time.Minute, 50*time.Millisecond, "%s never happened", what)
	}
	previewed := func(sha string) func() bool {
		return func() bool {
			if srv.LatestStatus(repo, sha, prs.StatusContext).State != "success" {
				return false
			}
			cs := legateComments(b, srv, repo, pr.Number)
			return len(cs) == 1 && strings.Contains(cs[0].Body, sha)
		}
	}
	waitFor("the first preview", previewed(head))

	var prTimes, mainTimes []time.Duration
	// Where the time goes, per phase: until legate has the webhook
	// (git push and Gitea's own work and delivery), then legate's fetch,
	// render and the rest until the test sees the feedback on Gitea.
	phases := map[string][]time.Duration{}
	phase := func(name string, from, to time.Time) {
		if !from.IsZero() && !to.IsZero() {
			phases[name] = append(phases[name], to.Sub(from))
		}
	}
	b.ResetTimer()
	for i := range b.N {
		w.git("checkout", "-q", "change")
		start := time.Now()
		sha := w.commit("change", "pr push", map[string]string{"nodes/edge/clusters.yaml": previewClusters(fmt.Sprintf("%ds", i+3), "api")})
		pushed := time.Now()
		waitFor("the preview of "+sha, previewed(sha))
		seen := time.Now()
		prTimes = append(prTimes, seen.Sub(start))
		hook := logs.first(start, "pull request webhook")
		fetched := logs.first(start, "pull request preview: head fetched")
		rendered := logs.first(start, "pull request preview: head rendered")
		phase("pr-push", start, pushed)
		phase("pr-webhook", pushed, hook)
		phase("pr-fetch", hook, fetched)
		phase("pr-render", fetched, rendered)
		phase("pr-feedback", rendered, seen)

		w.git("checkout", "-q", "main")
		start = time.Now()
		sha = w.commit("main", "served push", map[string]string{"nodes/east/clusters.yaml": previewClusters(fmt.Sprintf("%ds", i+3), "api")})
		pushed = time.Now()
		waitFor("the status of "+sha, func() bool { return srv.LatestStatus(repo, sha, forge.ContextFor("east")).State != "" })
		seen = time.Now()
		mainTimes = append(mainTimes, seen.Sub(start))
		hook = logs.first(start, "push webhook")
		phase("main-push", start, pushed)
		phase("main-webhook", pushed, hook)
		phase("main-rest", hook, seen)
	}
	b.StopTimer()
	report := func(name string, ds []time.Duration) {
		slices.Sort(ds)
		pct := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) / 1000 }
		b.ReportMetric(pct(0.5), name+"-p50-ms")
		b.ReportMetric(pct(0.99), name+"-p99-ms")
	}
	report("pr", prTimes)
	report("main", mainTimes)
	for name, ds := range phases {
		slices.Sort(ds)
		b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, name+"-p50-ms")
	}
}

// phaseLog keeps when the server logged each message, to split a
// benchmark's time into phases.
type phaseLog struct {
	mu   sync.Mutex
	msgs []phaseMsg
}

type phaseMsg struct {
	at   time.Time
	text string
}

func (l *phaseLog) add(_, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, phaseMsg{time.Now(), args})
}

// first is when msg was first logged after since (zero: never).
func (l *phaseLog) first(since time.Time, msg string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	want := `"msg"="` + msg + `"`
	for _, m := range l.msgs {
		if m.at.After(since) && strings.Contains(m.text, want) {
			return m.at
		}
	}
	return time.Time{}
}
