package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/sources"
)

func TestServeFlagsMergeWithTheConfigFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "legate.yaml")
	require.NoError(t, os.WriteFile(file, []byte("sources:\n- name: from-file\n  git: {url: /srv/cfg}\nhttpAddr: 127.0.0.1:9000\nsecretsDir: /srv/from-file\nxdsTLS: {certFile: /tls/file.crt, keyFile: /tls/file.key}\n"), 0o600))

	var f serveFlags
	fl := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	f.bind(fl)
	require.NoError(t, fl.Parse([]string{
		"--config", file,
		"--source", "name=edge,git=https://gitea.example/org/cfg.git,branch=main,forge=gitea,forge-token-env=TOKEN",
		"--webhook-secret-file", "gitea=/run/hook",
		"--webhook-secret-env", "github=HOOK",
		"--public-url", "https://legate.example",
		"--secrets-dir", "/run/legate-secrets",
		"--xds-tls-cert", "/tls/flag.crt",
		"--xds-client-ca", "/tls/ca.crt",
		"--max-file-size", "4096",
		"--read-token-file", "/run/read-token",
	}))
	cfg, err := f.config(fl)
	require.NoError(t, err)
	require.Len(t, cfg.Sources, 2)
	assert.Equal(t, "from-file", cfg.Sources[0].Name)
	assert.Equal(t, "edge", cfg.Sources[1].Name)
	assert.Equal(t, "main", cfg.Sources[1].Git.Branch)
	assert.Equal(t, sources.Secret{File: "/run/hook"}, cfg.Webhooks.Gitea)
	assert.Equal(t, sources.Secret{Env: "HOOK"}, cfg.Webhooks.GitHub)
	assert.Equal(t, "https://legate.example", cfg.PublicURL)
	assert.EqualValues(t, 4096, cfg.MaxFileSize, "serve reads files under the same limit validate takes")
	assert.Equal(t, "/run/read-token", cfg.ReadTokenFile)
	assert.Equal(t, "/run/legate-secrets", cfg.SecretsDir, "the flag wins over the file")
	assert.Equal(t, "127.0.0.1:9000", cfg.HTTPAddr, "an unset flag keeps the file's value")
	require.NotNil(t, cfg.XDSTLS)
	assert.Equal(t, serveconfig.XDSTLSConfig{CertFile: "/tls/flag.crt", KeyFile: "/tls/file.key", ClientCAFile: "/tls/ca.crt"}, *cfg.XDSTLS)
}

func TestServeFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--source", "name=a,git=/r,colour=blue"},
		{"--source", "name=a,git=/r", "--webhook-secret-file", "bitbucket=/f"},
		{"--source", "name=a,git=/r", "--webhook-secret-env", "gitea"},
		{"--git-ref", "main"},
		{"--source", "name=a,git=/r", "--xds-client-ca", "/ca.crt"},
	} {
		var f serveFlags
		fl := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		f.bind(fl)
		require.NoError(t, fl.Parse(args))
		_, err := f.config(fl)
		assert.Error(t, err, "%v", args)
	}
}

func TestServeRefusesUnknownLogSettings(t *testing.T) {
	_, err := runLegate(t, "serve", "--log-level", "loud", "--state-dir", t.TempDir())
	assert.ErrorContains(t, err, `log level "loud": want one of debug, info, warn, error`)
	_, err = runLegate(t, "serve", "--log-format", "xml", "--state-dir", t.TempDir())
	assert.ErrorContains(t, err, `log format "xml": want one of text, json`)
}
