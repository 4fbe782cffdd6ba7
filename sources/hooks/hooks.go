package hooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Trigger is called once per valid push event with every URL form the
// payload gives of the pushed repository (the forges send clone, SSH and web
// URLs, whose hosts may differ: a forge's SSH domain is often another name)
// and the pushed ref (e.g. "refs/heads/main"). A source matches the push
// when its URL names the repository in any of those forms. It must not
// block.
type Trigger func(repoURLs []string, ref string)

// GenericSignatureHeader is the signature header of the generic webhook:
// "sha256=" followed by the hex
// HMAC-SHA256 of the request body keyed with the shared secret (the same
// scheme as GitHub's X-Hub-Signature-256).
const GenericSignatureHeader = "X-Legate-Signature-256"

// GenericDeliveryHeader optionally carries a unique ID per delivery of
// the generic webhook; a repeated ID is ignored within DeliveryWindow.
const GenericDeliveryHeader = "X-Legate-Delivery"

// MaxBodyBytes bounds a webhook request body.
const MaxBodyBytes = 1 << 20

// Secrets holds the shared secret of each provider; a provider whose secret
// is empty rejects every request.
type Secrets struct {
	Gitea, GitHub, GitLab, Generic []byte
}

// Register adds POST /hooks/gitea, /hooks/github, /hooks/gitlab and
// /hooks/generic to mux.
func Register(mux *http.ServeMux, s Secrets, trigger Trigger) {
	RegisterReceivers(mux, s, Receivers{Push: trigger})
}

// Receivers are what the handlers call with a verified event. Push is
// required; a nil PullRequest acknowledges pull-request events and does
// nothing with them.
type Receivers struct {
	Push        Trigger
	PullRequest PRTrigger
}

// RegisterReceivers is Register with pull-request events as well.
func RegisterReceivers(mux *http.ServeMux, s Secrets, r Receivers) {
	mux.Handle("/hooks/gitea", giteaHandler(s.Gitea, r))
	mux.Handle("/hooks/github", gitHub(s.GitHub, r))
	mux.Handle("/hooks/gitlab", gitLab(s.GitLab, r))
	mux.Handle("/hooks/generic", Generic(s.Generic, r.Push))
}

// push is what a handler extracts from a payload.
type push struct {
	urls []string
	ref  string
}

// handler is the shared request flow of every provider.
type handler struct {
	// deliveryHeader names the provider's delivery ID header; a verified
	// delivery whose ID was seen within the window is not acted on again.
	deliveryHeader string
	seen           *deliveries
	verify         func(r *http.Request, body []byte) bool
	// parse returns ok false for events that are not pushes.
	parse   func(r *http.Request, body []byte) (push, bool, error)
	trigger Trigger
	// parsePR returns ok false for events that are not pull-request
	// events legate acts on; nil (or a nil onPR) ignores them all.
	parsePR func(r *http.Request, body []byte) (PullRequest, bool, error)
	onPR    PRTrigger
}

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "webhooks are POSTed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "cannot read payload", http.StatusBadRequest)
		return
	}
	if !h.verify(r, body) {
		http.Error(w, "invalid or missing signature", http.StatusUnauthorized)
		return
	}
	// Only a verified delivery is remembered, so nobody without the secret
	// can make legate ignore a genuine one.
	if id := r.Header.Get(h.deliveryHeader); id != "" && h.seen.replayed(id, time.Now()) {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "duplicate delivery, ignored\n")
		return
	}
	if h.parsePR != nil && h.onPR != nil {
		pr, ok, err := h.parsePR(r, body)
		if err != nil {
			http.Error(w, fmt.Sprintf("cannot parse pull-request event: %v", err), http.StatusBadRequest)
			return
		}
		if ok {
			pr.RepoURLs = compact(pr.RepoURLs)
			h.onPR(pr)
			w.WriteHeader(http.StatusAccepted)
			return
		}
	}
	p, ok, err := h.parse(r, body)
	if err != nil {
		http.Error(w, fmt.Sprintf("cannot parse push event: %v", err), http.StatusBadRequest)
		return
	}
	if !ok {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	// A payload names one repository in several forms (clone, ssh, web
	// URLs): hand them all over at once, so that a source matching one
	// form is fetched once and the others are not "unknown repositories".
	if urls := compact(p.urls); len(urls) > 0 {
		h.trigger(urls, p.ref)
	}
	w.WriteHeader(http.StatusAccepted)
}

// compact drops empty and repeated URLs.
func compact(in []string) []string {
	var urls []string
	for _, u := range in {
		if u != "" && !slices.Contains(urls, u) {
			urls = append(urls, u)
		}
	}
	return urls
}

// validHMAC checks a hex HMAC-SHA256 of body, optionally after a prefix
// such as "sha256=".
func validHMAC(secret, body []byte, got, prefix string) bool {
	if len(secret) == 0 || got == "" {
		return false
	}
	hexSig, ok := strings.CutPrefix(got, prefix)
	if !ok {
		return false
	}
	sig, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hmac.Equal(sig, mac.Sum(nil))
}

// equalToken compares a shared token in constant time, also hiding its
// length.
func equalToken(secret []byte, got string) bool {
	if len(secret) == 0 || got == "" {
		return false
	}
	a := sha256.Sum256(secret)
	b := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

func decode(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("payload is not the expected JSON: %w", err)
	}
	return nil
}

// Gitea handles Gitea (and Forgejo) push webhooks signed with
// X-Gitea-Signature (hex HMAC-SHA256 of the body).
func Gitea(secret []byte, trigger Trigger) http.Handler {
	return giteaHandler(secret, Receivers{Push: trigger})
}

func giteaHandler(secret []byte, rc Receivers) http.Handler {
	return handler{
		deliveryHeader: "X-Gitea-Delivery",
		seen:           newDeliveries(),
		verify: func(r *http.Request, body []byte) bool {
			return validHMAC(secret, body, r.Header.Get("X-Gitea-Signature"), "")
		},
		parse:   githubStylePush("X-Gitea-Event"),
		trigger: rc.Push,
		parsePR: giteaPullRequest,
		onPR:    rc.PullRequest,
	}
}

// GitHub handles GitHub push webhooks signed with X-Hub-Signature-256.
func GitHub(secret []byte, trigger Trigger) http.Handler {
	return gitHub(secret, Receivers{Push: trigger})
}

func gitHub(secret []byte, rc Receivers) http.Handler {
	return handler{
		deliveryHeader: "X-GitHub-Delivery",
		seen:           newDeliveries(),
		verify: func(r *http.Request, body []byte) bool {
			return validHMAC(secret, body, r.Header.Get("X-Hub-Signature-256"), "sha256=")
		},
		parse:   githubStylePush("X-GitHub-Event"),
		trigger: rc.Push,
		parsePR: githubPullRequest,
		onPR:    rc.PullRequest,
	}
}

// githubStylePush parses the push payload that GitHub defines and Gitea
// mirrors; eventHeader names the header that says which event it is.
// Other events are acknowledged and ignored.
func githubStylePush(eventHeader string) func(*http.Request, []byte) (push, bool, error) {
	return func(r *http.Request, body []byte) (push, bool, error) {
		if r.Header.Get(eventHeader) != "push" {
			return push{}, false, nil
		}
		var p struct {
			Ref        string `json:"ref"`
			Repository struct {
				CloneURL string `json:"clone_url"`
				SSHURL   string `json:"ssh_url"`
				GitURL   string `json:"git_url"` // GitHub only
				HTMLURL  string `json:"html_url"`
			} `json:"repository"`
		}
		if err := decode(body, &p); err != nil {
			return push{}, false, err
		}
		rp := p.Repository
		return push{urls: []string{rp.CloneURL, rp.SSHURL, rp.GitURL, rp.HTMLURL}, ref: p.Ref}, true, nil
	}
}

// GitLab handles GitLab push and tag push webhooks authenticated with the
// X-Gitlab-Token shared token.
func GitLab(secret []byte, trigger Trigger) http.Handler {
	return gitLab(secret, Receivers{Push: trigger})
}

func gitLab(secret []byte, rc Receivers) http.Handler {
	return handler{
		deliveryHeader: "X-Gitlab-Event-UUID",
		seen:           newDeliveries(),
		verify: func(r *http.Request, _ []byte) bool {
			return equalToken(secret, r.Header.Get("X-Gitlab-Token"))
		},
		parse: func(r *http.Request, body []byte) (push, bool, error) {
			switch r.Header.Get("X-Gitlab-Event") {
			case "Push Hook", "Tag Push Hook":
			default:
				return push{}, false, nil
			}
			var p struct {
				Ref     string `json:"ref"`
				Project struct {
					HTTPURL string `json:"git_http_url"`
					SSHURL  string `json:"git_ssh_url"`
					WebURL  string `json:"web_url"`
				} `json:"project"`
				Repository struct {
					HTTPURL string `json:"git_http_url"`
					SSHURL  string `json:"git_ssh_url"`
				} `json:"repository"`
			}
			if err := decode(body, &p); err != nil {
				return push{}, false, err
			}
			return push{urls: []string{p.Project.HTTPURL, p.Project.SSHURL, p.Project.WebURL, p.Repository.HTTPURL, p.Repository.SSHURL}, ref: p.Ref}, true, nil
		},
		trigger: rc.Push,
		parsePR: gitlabMergeRequest,
		onPR:    rc.PullRequest,
	}
}

// Generic handles a push notice from any system that can sign its body:
// POST a JSON object {"url": "<repository or oci:// URL>", "ref": "<ref>"}
// with GenericSignatureHeader set to "sha256=<hex HMAC-SHA256 of the body>".
func Generic(secret []byte, trigger Trigger) http.Handler {
	return handler{
		deliveryHeader: GenericDeliveryHeader,
		seen:           newDeliveries(),
		verify: func(r *http.Request, body []byte) bool {
			return validHMAC(secret, body, r.Header.Get(GenericSignatureHeader), "sha256=")
		},
		parse: func(_ *http.Request, body []byte) (push, bool, error) {
			var p struct {
				URL string `json:"url"`
				Ref string `json:"ref"`
			}
			if err := decode(body, &p); err != nil {
				return push{}, false, err
			}
			if p.URL == "" {
				return push{}, false, fmt.Errorf(`payload needs a "url"`)
			}
			return push{urls: []string{p.URL}, ref: p.Ref}, true, nil
		},
		trigger: trigger,
	}
}
