package serveconfig

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The problems of a config file name its line; those of flags do not
// borrow a line of the file.
func TestLocateNamesTheLineOfEachProblemInTheFile(t *testing.T) {
	data := []byte(`stateDir: /var/lib/legate
publicURL: legate.example
sources:
- name: a
  git: {}
- name: b
  oci:
    url: registry/x
`)
	file := filepath.Join(t.TempDir(), "legate.yaml")
	require.NoError(t, os.WriteFile(file, data, 0o600))
	cfg, err := LoadConfig(file)
	require.NoError(t, err)
	// A third source, from a --source flag, with its own problem.
	cfg.Sources = append(cfg.Sources, SourceConfig{Name: "c", Git: &GitSource{}})
	problems := cfg.Validate()
	require.Error(t, problems)

	got := Locate(problems, "legate.yaml", data, 0).Error()
	assert.Contains(t, got, "legate.yaml:2:1: publicURL: \"legate.example\" must be an absolute http(s) URL")
	assert.Contains(t, got, "legate.yaml:5:8: sources[0].git.url: required", "a missing field is placed at the field around it")
	assert.Contains(t, got, "legate.yaml:8:5: sources[1].oci.url: \"registry/x\" must start with oci://")
	assert.Contains(t, got, "\nsources[2].git.url: required", "a source of a flag has no line in the file")
	assert.NotContains(t, got, "legate.yaml:8:5: sources[2]")

	// --git-url puts its source first: the file's sources follow it.
	shifted := errors.Join(errors.New("sources[1].git.url: required"), errors.New("sources[0].git.url: required"))
	got = Locate(shifted, "legate.yaml", data, 1).Error()
	assert.Equal(t, "legate.yaml:5:8: sources[1].git.url: required\nsources[0].git.url: required", got)

	// A field the file does not set came from a flag.
	flagOnly := errors.New("xdsTLS.certFile (--xds-tls-cert): stat x: no such file or directory")
	assert.Equal(t, flagOnly.Error(), Locate(flagOnly, "legate.yaml", data, 0).Error())
	assert.NoError(t, Locate(nil, "legate.yaml", data, 0))
}
