package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/sources"
	gitsource "github.com/legate-dev/legate/sources/git"
)

func TestParseSourceFlag(t *testing.T) {
	tests := []struct {
		in   string
		want serveconfig.SourceConfig
		err  string
	}{
		{
			in: "name=edge,git=https://git.example/org/cfg.git,branch=main,path=envoy,interval=10s,password-env=GIT_TOKEN,forge=gitea,forge-token-file=/t",
			want: serveconfig.SourceConfig{
				Name: "edge", Path: "envoy", Interval: serveconfig.Duration{Duration: 10e9},
				Git:   &serveconfig.GitSource{URL: "https://git.example/org/cfg.git", Branch: "main", Auth: &serveconfig.GitAuth{Password: sources.Secret{Env: "GIT_TOKEN"}}},
				Forge: &serveconfig.ForgeConfig{Provider: forge.ProviderGitea, Token: sources.Secret{File: "/t"}},
			},
		},
		{
			in:   "name=tagged,git=/srv/cfg,semver=^1.2,commit=0123456789abcdef0123456789abcdef01234567",
			want: serveconfig.SourceConfig{Name: "tagged", Git: &serveconfig.GitSource{URL: "/srv/cfg", Ref: &gitsource.Ref{SemVer: "^1.2", Commit: "0123456789abcdef0123456789abcdef01234567"}}},
		},
		{
			in:   "name=ci,oci=oci://127.0.0.1:5000/cfg,tag=v1,insecure=true,docker-config=/d.json",
			want: serveconfig.SourceConfig{Name: "ci", OCI: &serveconfig.OCISource{URL: "oci://127.0.0.1:5000/cfg", Tag: "v1", Insecure: true, DockerConfig: "/d.json"}},
		},
		{
			in:   "name=edge,git=/srv/cfg,secrets=shared/ca+wildcards/*",
			want: serveconfig.SourceConfig{Name: "edge", Git: &serveconfig.GitSource{URL: "/srv/cfg"}, Secrets: []string{"shared/ca", "wildcards/*"}},
		},
		{in: "name=x", err: "set git=<url> or oci=<url>"},
		{in: "name=x,git=/r,digest=sha256:00", err: "oci sources only"},
		{in: "name=x,oci=oci://r/x,branch=main", err: "git sources only"},
		{in: "name=x,git=/r,colour=blue", err: `unknown key "colour"`},
		{in: "name=x,git=/r,brnach=main", err: `unknown key "brnach", did you mean branch`},
		{in: "name=x,gti=/r", err: `unknown key "gti", did you mean git`},
		{in: "name=x,git=/r,path", err: "not key=value"},
		{in: "name=x,git=https://u:s3cretpass123@h/r,interval=soon", err: "interval"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseSourceFlag(tt.in)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				assert.NotContains(t, err.Error(), "s3cretpass123")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestPreviewsSourceFlag(t *testing.T) {
	sc, err := parseSourceFlag("name=edge,git=https://gitea.example/org/cfg.git,branch=main,forge=gitea,forge-token-file=/t,previews=true,preview-concurrency=3")
	require.NoError(t, err)
	assert.Equal(t, &serveconfig.PreviewsConfig{Enabled: true, Concurrency: 3}, sc.Previews)
	_, err = parseSourceFlag("name=edge,git=https://gitea.example/org/cfg.git,previews=yes-please")
	assert.ErrorContains(t, err, "previews")
}
