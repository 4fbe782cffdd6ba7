package forge

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFromRepositoryURL(t *testing.T) {
	for _, tt := range []struct {
		provider   Provider
		url        string
		base, repo string
	}{
		{ProviderGitea, "https://gitea.example/org/repo.git", "https://gitea.example/", "org/repo"},
		{ProviderGitea, "http://127.0.0.1:3000/org/repo", "http://127.0.0.1:3000/", "org/repo"},
		{ProviderGitLab, "https://gitlab.example/group/sub/repo.git", "https://gitlab.example/", "group/sub/repo"},
		{ProviderGitHub, "https://github.com/org/repo.git", "", "org/repo"},
		{ProviderGitea, "ssh://git@gitea.example:2222/org/repo.git", "", "org/repo"},
		{ProviderGitHub, "git@github.com:org/repo.git", "", "org/repo"},
		{ProviderGitea, "/srv/git/repo", "", ""},
		{ProviderGitea, "file:///srv/git/repo", "", ""},
		{ProviderGitea, "https:///org/repo", "", ""},
		{ProviderGitea, "a/b@host:org/repo", "", ""},
	} {
		base, repo := FromRepositoryURL(tt.provider, tt.url)
		assert.Equal(t, tt.base, base, tt.url)
		assert.Equal(t, tt.repo, repo, tt.url)
	}
}
