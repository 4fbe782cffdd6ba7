package controller

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/legate-dev/legate/pipeline"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
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

// A source whose many nodes all fail still gets a status the API server
// takes: every message is cut to a bound, on a rune boundary, and says so.
func TestStatusTextsAreBounded(t *testing.T) {
	var verdicts []nodeVerdict
	for i := range 2000 {
		node := revisions.NodeStatus{NodeID: fmt.Sprintf("node-%04d", i), State: revisions.StateRollback}
		node.History = []revisions.RevisionStatus{{Hash: "h", Source: "envoysource/a/b", Taint: &revisions.Taint{Message: "rejected by 1 of 1 proxies; pod: élan " + strings.Repeat("x", 200)}}}
		verdicts = append(verdicts, verdictOf(node, "envoysource/a/b"))
	}
	var conds []metav1.Condition
	readinessOf(1, &pipeline.Status{}, "", nil, verdicts).set(&conds)
	for _, c := range conds {
		assert.LessOrEqual(t, len(c.Message), maxConditionMessage, c.Type)
		assert.True(t, utf8.ValidString(c.Message), c.Type)
	}
	ready := meta.FindStatusCondition(conds, "Ready")
	require.NotNil(t, ready)
	assert.Equal(t, ReasonRollback, ready.Reason)
	assert.True(t, strings.HasSuffix(ready.Message, "…(cut)"))
	assert.Equal(t, "ab …(cut)", bounded("ab"+strings.Repeat("é", 10), 12), "cut before a rune, not through it")
}
