package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
)

// A configuration reads the Secrets of its own namespace only: a bare
// name resolves there, another namespace's Secret is refused with the
// file and line of the reference.
func TestSecretsResolveInTheObjectsNamespace(t *testing.T) {
	pos := render.Position{File: "envoy/edge.yaml", Line: 7}
	nc := &render.NodeConfig{NodeID: "edge", ExternalSecrets: []render.ExternalSecret{
		{Name: "cert", Ref: "edge-cert", Kind: "tls", Source: pos},
		{Name: "own", Ref: "team-a/ca", Kind: "validation", Source: pos},
	}}
	res := &render.Result{Nodes: map[string]*render.NodeConfig{"edge": nc}}
	assert.Empty(t, secretScope("envoysource/team-a/config", res))
	assert.Equal(t, "team-a/edge-cert", nc.ExternalSecrets[0].Ref)
	assert.Equal(t, "team-a/ca", nc.ExternalSecrets[1].Ref)

	nc.ExternalSecrets = append(nc.ExternalSecrets, render.ExternalSecret{Name: "theirs", Ref: "kube-system/signing-key", Kind: "opaque", Key: "k", Source: pos})
	diags := secretScope("envoyconfig/team-a/edge", res)
	require.Len(t, diags, 1)
	assert.Equal(t, "envoy/edge.yaml:7", diags[0].Pos.String())
	assert.Contains(t, diags[0].Message, `ref "kube-system/signing-key" is outside what source "envoyconfig/team-a/edge" may use: a configuration reads the Secrets of its own namespace "team-a" only`)
}
