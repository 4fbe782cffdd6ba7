package hooks

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzPushPayloads sends arbitrary, correctly signed bodies to every
// provider's handler, so that the payload parsers are reached: no body may
// crash a handler or earn a server error, and a push may only trigger
// fetches of URLs the body itself names.
func FuzzPushPayloads(f *testing.F) {
	f.Add([]byte(`{"ref":"refs/heads/main","repository":{"clone_url":"https://gitea.example/org/cfg.git","ssh_url":"git@gitea.example:org/cfg.git","html_url":"https://gitea.example/org/cfg"}}`))
	f.Add([]byte(`{"ref":"refs/tags/v1","project":{"git_http_url":"https://gitlab.example/g/cfg.git","git_ssh_url":"git@gitlab.example:g/cfg.git"}}`))
	f.Add([]byte(`{"url":"oci://registry.example/cfg","ref":"v1.2.3"}`))
	f.Add([]byte(`{"repository":{"clone_url":` + strings.Repeat("[", 5000) + `}}`))
	f.Add([]byte(`{"ref":"\ud800","url":"\u0000"}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(``))
	secret := []byte("fuzz-secret")
	sign := func(body []byte) string {
		m := hmac.New(sha256.New, secret)
		m.Write(body)
		return hex.EncodeToString(m.Sum(nil))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, p := range []struct {
			name    string
			handler func(Trigger) http.Handler
			headers map[string]string
		}{
			{"gitea", func(tr Trigger) http.Handler { return Gitea(secret, tr) }, map[string]string{"X-Gitea-Event": "push", "X-Gitea-Signature": sign(body)}},
			{"github", func(tr Trigger) http.Handler { return GitHub(secret, tr) }, map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + sign(body)}},
			{"gitlab", func(tr Trigger) http.Handler { return GitLab(secret, tr) }, map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": string(secret)}},
			{"generic", func(tr Trigger) http.Handler { return Generic(secret, tr) }, map[string]string{GenericSignatureHeader: "sha256=" + sign(body)}},
		} {
			var triggered [][]string
			h := p.handler(func(urls []string, _ string) { triggered = append(triggered, urls) })
			req := httptest.NewRequest(http.MethodPost, "/hooks/"+p.name, bytes.NewReader(body))
			for k, v := range p.headers {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s: status %d for a signed body", p.name, rec.Code)
			}
			if rec.Code != http.StatusAccepted && len(triggered) > 0 {
				t.Fatalf("%s: answered %d but triggered %v", p.name, rec.Code, triggered)
			}
			for _, urls := range triggered {
				for _, u := range urls {
					if u == "" {
						t.Fatalf("%s: triggered an empty URL", p.name)
					}
					// JSON strings may be escaped, and invalid UTF-8 reads
					// as U+FFFD: compare with the body as the decoder sees it.
					if seen := asDecoded(body); !strings.Contains(seen, u) && !strings.Contains(seen, `\`) {
						t.Fatalf("%s: triggered %q, which the body does not name", p.name, u)
					}
				}
			}
		}
	})
}

// asDecoded is body with every byte that is not valid UTF-8 replaced by
// U+FFFD, as encoding/json reads strings.
func asDecoded(body []byte) string {
	var b strings.Builder
	for len(body) > 0 {
		r, size := utf8.DecodeRune(body)
		b.WriteRune(r)
		body = body[size:]
	}
	return b.String()
}

// FuzzPullRequestPayloads sends arbitrary, correctly signed pull-request
// events to every forge's handler: no body may crash a handler or earn a
// server error, and an event acted on always carries a valid number, a
// full hex SHA (for an open request) and the ref the forge keeps it under.
func FuzzPullRequestPayloads(f *testing.F) {
	f.Add(githubPR("opened", "org/cfg"))
	f.Add(giteaPR("synchronized", 2))
	f.Add(gitlabMR("update", 11))
	f.Add([]byte(`{"action":"closed","number":9223372036854775807,"pull_request":{"base":{"ref":"main"}}}`))
	f.Add([]byte(`{"object_attributes":{"iid":1,"action":"open","target_branch":"` + strings.Repeat("x", 300) + `"}}`))
	f.Add([]byte(`{"pull_request":` + strings.Repeat("{", 5000) + `}`))
	secret := []byte("fuzz-secret")
	sign := func(body []byte) string {
		m := hmac.New(sha256.New, secret)
		m.Write(body)
		return hex.EncodeToString(m.Sum(nil))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, p := range []struct {
			name    string
			handler func(Receivers) http.Handler
			headers map[string]string
			refPre  string
		}{
			{"gitea", func(r Receivers) http.Handler { return giteaHandler(secret, r) }, map[string]string{"X-Gitea-Event": "pull_request", "X-Gitea-Event-Type": "pull_request_sync", "X-Gitea-Signature": sign(body)}, "refs/pull/"},
			{"github", func(r Receivers) http.Handler { return gitHub(secret, r) }, map[string]string{"X-GitHub-Event": "pull_request", "X-Hub-Signature-256": "sha256=" + sign(body)}, "refs/pull/"},
			{"gitlab", func(r Receivers) http.Handler { return gitLab(secret, r) }, map[string]string{"X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Token": string(secret)}, "refs/merge-requests/"},
		} {
			var got []PullRequest
			h := p.handler(Receivers{Push: func([]string, string) { t.Fatalf("%s: a pull-request event triggered a fetch", p.name) }, PullRequest: func(pr PullRequest) { got = append(got, pr) }})
			req := httptest.NewRequest(http.MethodPost, "/hooks/"+p.name, bytes.NewReader(body))
			for k, v := range p.headers {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s: status %d for a signed body", p.name, rec.Code)
			}
			if rec.Code != http.StatusAccepted && len(got) > 0 {
				t.Fatalf("%s: answered %d but acted on %v", p.name, rec.Code, got)
			}
			for _, pr := range got {
				if pr.Number <= 0 || pr.Number > maxPRNumber {
					t.Fatalf("%s: acted on number %d", p.name, pr.Number)
				}
				if !pr.Closed && !isHexSHA(pr.HeadSHA) {
					t.Fatalf("%s: acted on head %q", p.name, pr.HeadSHA)
				}
				if !strings.HasPrefix(pr.HeadRef, p.refPre) || !strings.HasSuffix(pr.HeadRef, "/head") {
					t.Fatalf("%s: head ref %q", p.name, pr.HeadRef)
				}
				for _, u := range pr.RepoURLs {
					if u == "" {
						t.Fatalf("%s: an empty repository URL", p.name)
					}
				}
			}
		}
	})
}
