package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVersionJSON(t *testing.T) {
	var out bytes.Buffer
	cmd := newRootCommand()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"version", "-o", "json"})
	require.NoError(t, cmd.Execute())

	var got versionInfo
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	assert.Equal(t, version, got.Version)
	assert.NotEmpty(t, got.GoVersion)
	assert.Equal(t, len(servedTypes), got.XDSTypes)
}

func TestVersionRejectsUnknownOutput(t *testing.T) {
	cmd := newRootCommand()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"version", "-o", "yaml"})
	require.ErrorContains(t, cmd.Execute(), `--output "yaml"`)
}
