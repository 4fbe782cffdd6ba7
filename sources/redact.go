package sources

import (
	"net/url"
	"regexp"
	"strings"
)

// Redacted replaces every secret that Redact removes.
const Redacted = "[redacted]"

var secretPatterns = []*regexp.Regexp{
	// PEM blocks (private keys, certificates), including truncated ones.
	regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]+-----.*?(-----END [A-Z0-9 ]+-----|$)`),
	// user:password@ in URLs.
	regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@`),
	// Authorization header values.
	regexp.MustCompile(`(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}`),
	// Well-known token shapes: GitHub, GitLab, Slack, AWS, JWTs.
	regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{16,}|xox[abpr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})\b`),
	regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`),
	// key=value and key: value pairs whose key names a secret (see
	// secretLike for which values count).
	regexp.MustCompile(`(?i)\b(password|passwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key)(\s*[=:]\s*)("[^"\s]{6,}"|'[^'\s]{6,}'|[A-Za-z0-9_./+=~-]{6,})`),
}

// secretLike tells a credential from a word in a parser message such as
// "unexpected token: expected": it has a digit, or is long.
func secretLike(v string) bool {
	v = strings.Trim(v, `"'`)
	return len(v) >= 20 || strings.ContainsAny(v, "0123456789")
}

// Redact removes secrets from text meant for a person: every known value
// (credentials the caller has read) and anything shaped like a credential
// (PEM blocks, URL user info, authorization headers, well-known token
// formats, key=value pairs naming a secret).
func Redact(text string, known ...string) string {
	for _, k := range known {
		if len(k) >= 4 {
			text = strings.ReplaceAll(text, k, Redacted)
		}
	}
	for i, re := range secretPatterns {
		switch i {
		case 1:
			text = re.ReplaceAllString(text, "${1}"+Redacted+"@")
		case 2:
			text = re.ReplaceAllStringFunc(text, func(m string) string {
				sub := re.FindStringSubmatch(m)
				if !secretLike(m[len(sub[1]):]) {
					return m
				}
				return sub[1] + " " + Redacted
			})
		case 5:
			text = re.ReplaceAllStringFunc(text, func(m string) string {
				sub := re.FindStringSubmatch(m)
				if !secretLike(sub[3]) {
					return m
				}
				return sub[1] + sub[2] + Redacted
			})
		default:
			text = re.ReplaceAllString(text, Redacted)
		}
	}
	return text
}

// StripUserinfo returns raw without user name and password, and the user
// info it removed (nil when there was none). Strings that do not parse as
// URLs with a scheme (local paths, scp-like "git@host:repo") come back as
// they are.
func StripUserinfo(raw string) (string, *url.Userinfo) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.User == nil {
		return raw, nil
	}
	user := u.User
	u.User = nil
	return u.String(), user
}
