package forge

import (
	"net/url"
	"strings"
)

// FromRepositoryURL derives, from the URL a Git repository is cloned
// from, the forge's base URL and the repository's path on it ("org/repo"):
// https://gitea.example/org/repo.git gives https://gitea.example/ and
// org/repo. GitHub's base URL is its API's, so none is derived for it.
// SSH URLs (ssh://git@host/org/repo.git, git@host:org/repo.git) give the
// repository only. Either result is "" when it cannot be derived.
func FromRepositoryURL(provider Provider, raw string) (baseURL, repository string) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", sshRepository(raw)
	}
	if provider != ProviderGitHub {
		baseURL = u.Scheme + "://" + u.Host + "/"
	}
	return baseURL, trimRepository(u.Path)
}

// sshRepository takes "org/repo" from git@host:org/repo.git and
// ssh://git@host/org/repo.git.
func sshRepository(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Scheme == "ssh" {
		return trimRepository(u.Path)
	}
	if at, rest, ok := strings.Cut(raw, "@"); ok && !strings.Contains(at, "/") {
		if _, p, ok := strings.Cut(rest, ":"); ok {
			return trimRepository(p)
		}
	}
	return ""
}

func trimRepository(p string) string { return strings.TrimSuffix(strings.Trim(p, "/"), ".git") }
