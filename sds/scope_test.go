package sds

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
)

func TestSecretScopeResolve(t *testing.T) {
	sc := Scope{Source: "team-a", Home: "team-a", Grants: []string{"shared/*", "wildcard-cert"}}
	for _, tc := range []struct {
		ref, want, err string
	}{
		{ref: "edge-cert", want: "team-a/edge-cert"},
		{ref: "team-a/edge-cert", want: "team-a/edge-cert"},
		{ref: "wildcard-cert", want: "wildcard-cert"},
		{ref: "shared/ca", want: "shared/ca"},
		{ref: "team-b/edge-cert", err: `ref "team-b/edge-cert" is outside what source "team-a" may use`},
		{ref: "shared/x/y", err: "outside"},
		{ref: "../team-b/edge-cert", err: "outside"},
		{ref: "/etc/ssl", err: "outside"},
		{ref: "team-a/../team-b", err: "outside"},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			got, err := sc.Resolve(tc.ref)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestSecretScopeApplyRewritesRefsAndHash(t *testing.T) {
	nc := &render.NodeConfig{NodeID: "edge", ExternalSecrets: []render.ExternalSecret{
		{Name: "edge-cert", Ref: "edge-cert", Kind: "tls", Source: render.Position{File: "edge.yaml", Line: 9}},
	}}
	nc.Hash = render.HashNode(nc)
	before := nc.Hash
	res := &render.Result{Nodes: map[string]*render.NodeConfig{"edge": nc}}
	assert.Empty(t, Scope{Source: "team-a", Home: "team-a"}.Apply(res))
	assert.Equal(t, "team-a/edge-cert", nc.ExternalSecrets[0].Ref)
	assert.NotEqual(t, before, nc.Hash, "the hash follows the resolved ref, so a moved secret is a new revision")
	assert.Equal(t, render.HashNode(nc), nc.Hash)

	nc.ExternalSecrets = append(nc.ExternalSecrets,
		render.ExternalSecret{Name: "other", Ref: "team-b/cert", Kind: "tls", Source: render.Position{File: "edge.yaml", Line: 20}},
		render.ExternalSecret{Name: "dots", Ref: "team-a/..", Kind: "tls", Source: render.Position{File: "a.yaml", Line: 3}})
	diags := Scope{Source: "team-a", Home: "team-a"}.Apply(res)
	require.Len(t, diags, 2)
	assert.Equal(t, "a.yaml:3", diags[0].Pos.String(), "sorted by position")
	assert.Equal(t, RuleScope, diags[1].Rule)
	assert.Contains(t, diags[1].Message, `secret "other": ref "team-b/cert" is outside what source "team-a" may use`)
}

func TestGrantShape(t *testing.T) {
	for _, ok := range []string{"shared/*", "ca", "team-?/ca"} {
		assert.NoError(t, GrantShape(ok), ok)
	}
	for _, bad := range []string{"", "..", "a/../b", "a/b/c", "/abs", ".hidden", "a/[", "*/"} {
		assert.Error(t, GrantShape(bad), bad)
	}
}

// Generated endpoints read the EndpointSlices of the source's own
// namespace: an unnamed one is placed there (and the hash follows), another
// is refused, grants or not.
func TestScopePlacesEndpointsInHome(t *testing.T) {
	nc := &render.NodeConfig{NodeID: "edge", ExternalEndpoints: []render.ExternalEndpoints{
		{ClusterName: "api", Selector: "app=api", Source: render.Position{File: "edge.yaml", Line: 9}},
	}}
	nc.Hash = render.HashNode(nc)
	before := nc.Hash
	res := &render.Result{Nodes: map[string]*render.NodeConfig{"edge": nc}}
	sc := Scope{Source: "envoysource/team-a/edge", Home: "team-a", Grants: []string{"shared/*"}}
	assert.Empty(t, sc.Apply(res))
	assert.Equal(t, "team-a", nc.ExternalEndpoints[0].Namespace)
	assert.NotEqual(t, before, nc.Hash)

	nc.ExternalEndpoints[0].Namespace = "shared"
	diags := sc.Apply(res)
	require.Len(t, diags, 1)
	assert.Equal(t, `endpoints of cluster "api": the EndpointSlices of namespace "shared" are outside what source "envoysource/team-a/edge" may use: it reads those of "team-a" only`, diags[0].Message)
	assert.Equal(t, "edge.yaml:9", diags[0].Pos.String())
}
