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
