package serveconfig

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/sources"
	gitsource "github.com/legate-dev/legate/sources/git"
)

func TestLoadConfigSources(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "legate.yaml")
	require.NoError(t, os.WriteFile(p, []byte(`
publicURL: https://legate.example/
webhooks:
  gitea: {file: /run/secrets/gitea-hook}
  github: {env: GITHUB_HOOK_SECRET}
sources:
- name: edge
  interval: 30s
  git:
    url: https://gitea.example/org/cfg.git
    ref: {semver: ">=1.0.0 <2.0.0"}
    path: envoy
    auth:
      username: bot
      password: {env: GIT_TOKEN}
  forge:
    provider: gitea
    token: {file: /run/secrets/gitea-token}
- name: ci
  oci:
    url: oci://registry.example/org/cfg
    tag: stable
    dockerConfig: /run/secrets/docker.json
`), 0o600))
	cfg, err := LoadConfig(p)
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	cfg = cfg.WithDefaults()
	assert.Equal(t, "https://legate.example", cfg.PublicURL)
	assert.Equal(t, sources.Secret{File: "/run/secrets/gitea-hook"}, cfg.Webhooks.Gitea)
	require.Len(t, cfg.Sources, 2)

	edge := cfg.Sources[0]
	gc := edge.GitConfig("/state")
	assert.Equal(t, gitsource.Ref{SemVer: ">=1.0.0 <2.0.0"}, gc.Ref)
	assert.Equal(t, "envoy", gc.Path)
	assert.Equal(t, sources.Secret{Env: "GIT_TOKEN"}, gc.Auth.Password)
	fc := edge.forgeConfig()
	assert.Equal(t, "https://gitea.example/", fc.BaseURL, "taken from the git url")
	assert.Equal(t, "org/cfg", fc.Repository, "taken from the git url")
	r, err := edge.Reporter()
	require.NoError(t, err)
	assert.IsType(t, &forge.Gitea{}, r, "the source's provider")
	assert.Equal(t, DefaultInterval, cfg.Sources[1].Interval.Duration)
	assert.Equal(t, "stable", cfg.Sources[1].ociConfig().Ref.Tag)

	require.NoError(t, os.WriteFile(p, []byte("sources:\n- name: x\n  git: {url: /r, brnch: main}\n"), 0o600))
	_, err = LoadConfig(p)
	assert.ErrorContains(t, err, "brnch", "unknown fields are errors")
}

func TestValidateNamesTheField(t *testing.T) {
	git := func(url string) *GitSource { return &GitSource{URL: url} }
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"no source", Config{}, []string{"no source configured"}},
		{"missing url", Config{Sources: []SourceConfig{{Name: "a", Git: git("/r")}, {Name: "b", Git: git("")}}}, []string{"sources[1].git.url: required"}},
		{"duplicate name", Config{Sources: []SourceConfig{{Name: "a", Git: git("/r")}, {Name: "a", Git: git("/s")}}}, []string{`sources[1].name: "a" is also the name of sources[0]`}},
		{"both kinds", Config{Sources: []SourceConfig{{Name: "a", Git: git("/r"), OCI: &OCISource{URL: "oci://r/x"}}}}, []string{"sources[0]: set git or oci, not both"}},
		{"bad scheme", Config{Sources: []SourceConfig{{Name: "a", Git: git("ftp://x/r")}}}, []string{"sources[0].git:", `scheme "ftp"`}},
		{"short commit", Config{Sources: []SourceConfig{{Name: "a", Git: &GitSource{URL: "/r", Ref: &gitsource.Ref{Commit: "abc"}}}}}, []string{"sources[0].git:", "40-character"}},
		{"oci url", Config{Sources: []SourceConfig{{Name: "a", OCI: &OCISource{URL: "registry/x"}}}}, []string{"sources[0].oci.url:", "oci://"}},
		{"oci url scheme credentials", Config{Sources: []SourceConfig{{Name: "a", OCI: &OCISource{URL: "https://bob:hunter2pw@registry/x"}}}}, []string{"sources[0].oci.url:", "oci://"}},
		{"oci url credentials", Config{Sources: []SourceConfig{{Name: "a", OCI: &OCISource{URL: "oci://bob:hunter2pw@registry/x"}}}}, []string{"sources[0].oci:", "must not carry credentials"}},
		{"two credentials", Config{Sources: []SourceConfig{{Name: "a", Git: &GitSource{URL: "https://h/o/r", Auth: &GitAuth{Password: sources.Secret{Env: "A"}, BearerToken: sources.Secret{Env: "B"}}}}}}, []string{"sources[0].git:", "only one of"}},
		{"forge provider", Config{Sources: []SourceConfig{{Name: "a", Git: git("/r"), Forge: &ForgeConfig{Provider: "bitbucket"}}}}, []string{`sources[0].forge.provider: "bitbucket"`}},
		{"forge token and repo", Config{Sources: []SourceConfig{{Name: "a", Git: git("/r"), Forge: &ForgeConfig{Provider: forge.ProviderGitHub}}}}, []string{"sources[0].forge.token: required", "sources[0].forge.repository: required"}},
		{"forge gitea base", Config{Sources: []SourceConfig{{Name: "a", Git: git("git@h:o/r.git"), Forge: &ForgeConfig{Provider: forge.ProviderGitea, Token: sources.Secret{Env: "T"}}}}}, []string{"sources[0].forge.baseURL: required"}},
		{"public url", Config{PublicURL: "legate:8080", Sources: []SourceConfig{{Name: "a", Git: git("/r")}}}, []string{"publicURL:"}},
		{"hook secret", Config{Webhooks: WebhookConfig{GitLab: sources.Secret{File: "f", Env: "E"}}, Sources: []SourceConfig{{Name: "a", Git: git("/r")}}}, []string{"webhooks.gitlab: set file or env, not both"}},
		{"bad name", Config{Sources: []SourceConfig{{Name: "a b", Git: git("/r")}}}, []string{"sources[0].name:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotContains(t, err.Error(), "hunter2pw", "a password in a URL is never quoted")
		})
	}
	ok := Config{Sources: []SourceConfig{{Name: "a", Git: git("git@h:o/r.git"), Forge: &ForgeConfig{Provider: forge.ProviderGitHub, Token: sources.Secret{Env: "T"}}}}}
	require.NoError(t, ok.Validate())
	assert.Equal(t, "o/r", ok.Sources[0].forgeConfig().Repository)
}

// A config file error names the file, line and column and the field in
// YAML terms, not "error unmarshaling JSON".
func TestLoadConfigErrorsPointAtTheField(t *testing.T) {
	tests := []struct{ doc, want string }{
		{"sources:\n- name: a\n  git: {url: /r}\n  interval: soon\n", `:4:3: sources[0].interval: duration "soon": time: invalid duration "soon"`},
		{"sources:\n- name: a\n  gitt:\n    url: /r\n", `:3:3: sources[0].gitt: unknown field "gitt", did you mean git`},
		{"history: many\n", `:1:1: history: want int, found string`},
		{"sources:\n- name: a\n  git: {url: [\n", `:3:14: did not find expected node content`},
	}
	for _, tt := range tests {
		p := filepath.Join(t.TempDir(), "legate.yaml")
		require.NoError(t, os.WriteFile(p, []byte(tt.doc), 0o600))
		_, err := LoadConfig(p)
		require.Error(t, err)
		assert.Equal(t, p+tt.want, err.Error())
		assert.NotContains(t, err.Error(), "JSON")
	}
}
