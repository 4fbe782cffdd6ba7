package analysis

import (
	"net/url"
	"strings"
	"unicode"

	"github.com/legate-dev/legate/textbound"
)

// MaxMessage bounds every message a Result carries: it ends up in a
// Kubernetes status, a commit status and the status page, and part of it
// comes from a server legate does not control.
const MaxMessage = 256

func textboundCut(s string, n int) string { return textbound.Cut(s, n, "…") }

// clean makes text from a remote server fit for a status: each secret
// header value is replaced first (a server that echoes the request's
// Authorization header must not publish the token), then control
// characters become spaces and runs of spaces collapse, then the text is
// cut to MaxMessage bytes.
func clean(s string, secrets []string) string {
	for _, v := range secrets {
		if len(v) >= 4 { // shorter values would redact ordinary words
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	var b strings.Builder
	space := false
	for _, r := range s {
		if r == unicode.ReplacementChar || unicode.IsControl(r) || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			if !space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
		if b.Len() > 4*MaxMessage {
			break
		}
	}
	return textboundCut(strings.TrimSpace(b.String()), MaxMessage)
}

// redactURL keeps scheme, host and path: a user may put a token in the
// query string, and messages name the endpoint without it.
func redactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	r := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	return r.String()
}
