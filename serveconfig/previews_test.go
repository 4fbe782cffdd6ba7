package serveconfig

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/sources"
)

func TestPreviewsConfigChecks(t *testing.T) {
	tok := sources.Secret{File: "/run/token"}
	gitForge := &ForgeConfig{Provider: forge.ProviderGitea, BaseURL: "https://gitea.example/", Repository: "org/cfg", Token: tok}
	for name, tt := range map[string]struct {
		src  SourceConfig
		want string
	}{
		"no forge":         {SourceConfig{Name: "a", Git: &GitSource{URL: "https://gitea.example/org/cfg.git", Branch: "main"}, Previews: &PreviewsConfig{Enabled: true}}, "sources[0].previews: pull-request previews need a forge"},
		"oci":              {SourceConfig{Name: "a", OCI: &OCISource{URL: "oci://r.example/cfg"}, Forge: gitForge, Previews: &PreviewsConfig{Enabled: true}}, "sources[0].previews: pull-request previews need a git source"},
		"no branch":        {SourceConfig{Name: "a", Git: &GitSource{URL: "https://gitea.example/org/cfg.git"}, Forge: gitForge, Previews: &PreviewsConfig{Enabled: true}}, "sources[0].previews: pull-request previews need a source that follows a branch"},
		"wild concurrency": {SourceConfig{Name: "a", Git: &GitSource{URL: "https://gitea.example/org/cfg.git", Branch: "main"}, Forge: gitForge, Previews: &PreviewsConfig{Enabled: true, Concurrency: 1000}}, "sources[0].previews.concurrency: 1000 is outside 0..64"},
		"valid":            {SourceConfig{Name: "a", Git: &GitSource{URL: "https://gitea.example/org/cfg.git", Branch: "main"}, Forge: gitForge, Previews: &PreviewsConfig{Enabled: true, Concurrency: 3}}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			err := Config{Sources: []SourceConfig{tt.src}}.Validate()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.want)
		})
	}
}
