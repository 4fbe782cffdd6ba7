package forge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/legate-dev/legate/sources"
)

// Comment is legate's one comment on a pull request: found by Marker (a
// hidden HTML comment in its body) and edited in place, never posted twice.
type Comment struct {
	// Number is the pull request's number (GitLab: the merge request's iid).
	Number int64 `json:"number"`
	// Marker is the line that identifies legate's comment, such as
	// "<!-- legate-preview: SOURCE -->"; Body starts with it.
	Marker string `json:"marker"`
	Body   string `json:"body"`
}

// Commenter keeps one comment per pull request. Reporters of the three
// forges implement it; it is safe for concurrent use, but two upserts of
// the same marker must not run at once (the Dispatcher delivers one
// target's entries in order).
type Commenter interface {
	// UpsertComment edits the comment of c.Number whose body holds c.Marker
	// to c.Body, or creates it when there is none.
	UpsertComment(ctx context.Context, c Comment) error
	// CommentLimit is the forge's longest comment, in characters.
	CommentLimit() int
}

// Comment limits of the forges, in characters. GitHub refuses a body over
// 65 536; GitLab's notes stop at 1 000 000; Gitea stores any length
// (its column is LONGTEXT), so legate keeps to GitHub's, which is
// already more than anyone reads.
const (
	GitHubCommentLimit = 65536
	GitLabCommentLimit = 1000000
	GiteaCommentLimit  = 65536
)

// Bounds of the comment search: the pages of comments read to find the
// marker, and the size of one answer from a forge.
const (
	commentPageSize  = 50
	maxCommentPages  = 20
	maxResponseBytes = 8 << 20
)

// CutComment returns body cut to at most limit characters, on a line
// boundary where there is one, ending with a note that says it was cut.
func CutComment(body string, limit int) string {
	if limit <= 0 || utf8.RuneCountInString(body) <= limit {
		return body
	}
	const note = "\n\n… cut here: the full preview is longer than this forge allows in one comment (%d characters); run `legate diff` for all of it.\n"
	tail := fmt.Sprintf(note, limit)
	keep := limit - utf8.RuneCountInString(tail)
	if keep < 0 {
		keep = 0
	}
	r := []rune(body)[:keep]
	cut := string(r)
	if i := strings.LastIndexByte(cut, '\n'); i > len(cut)/2 {
		cut = cut[:i]
	}
	// A cut inside a fenced block would turn the note into code.
	if strings.Count(cut, "```")%2 == 1 {
		cut += "\n```"
	}
	return cut + tail
}

// prepareComment validates c and returns it scrubbed of the token and
// anything credential-shaped, cut to limit.
func prepareComment(c Comment, limit int, known ...string) (Comment, error) {
	if c.Number <= 0 {
		return c, &PermanentError{fmt.Errorf("pull request comment needs a positive number, not %d", c.Number)}
	}
	if c.Marker == "" || strings.ContainsAny(c.Marker, "\r\n") {
		return c, &PermanentError{fmt.Errorf("pull request comment needs a one-line marker")}
	}
	c.Body = sources.Redact(c.Body, known...)
	// The marker opens the body: a person quoting legate's comment in
	// theirs does not start with it, so theirs is never taken for legate's.
	if !strings.HasPrefix(c.Body, c.Marker) {
		c.Body = c.Marker + "\n" + c.Body
	}
	c.Body = CutComment(c.Body, limit)
	return c, nil
}

// commentError scrubs the token from a comment delivery error, keeping
// whether it is permanent.
func commentError(repo string, number int64, code int, err error, token string) error {
	msg := fmt.Errorf("comment on pull request %d of %s: %s", number, repo, sources.Redact(err.Error(), token))
	return classify(code, msg)
}

// boundedClient is c with every response body cut at maxResponseBytes: the
// SDKs read answers whole, and a forge (or something posing as one) must
// not make legate hold an unbounded one.
func boundedClient(c *http.Client) *http.Client {
	out := *c
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out.Transport = boundedTransport{base: base, limit: maxResponseBytes}
	return &out
}

type boundedTransport struct {
	base  http.RoundTripper
	limit int64
}

func (b boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.base.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = &boundedBody{rc: resp.Body, left: b.limit}
	return resp, nil
}

// errTooLarge ends the read of an answer over maxResponseBytes.
var errTooLarge = errors.New("the forge's answer is larger than legate reads")

type boundedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }
