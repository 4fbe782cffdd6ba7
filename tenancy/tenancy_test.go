package tenancy

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Who may receive a node: its owner's namespace; the platform's nodes
// only where shared; nobody else, told nothing of the owner.
func TestMayReceive(t *testing.T) {
	rule := Rule{Home: "legate-system"}
	for name, tc := range map[string]struct {
		namespace, owner, shared string
		ok                       bool
	}{
		"nobody owns it":                   {namespace: "team-b", ok: true},
		"own namespace":                    {namespace: "team-a", owner: "envoyconfig/team-a/pay", ok: true},
		"own namespace, an EnvoySource":    {namespace: "team-a", owner: "envoysource/team-a/repo", ok: true},
		"another namespace":                {namespace: "team-b", owner: "envoyconfig/team-a/pay"},
		"another namespace's EnvoySource":  {namespace: "team-b", owner: "envoysource/team-a/repo"},
		"platform, not shared":             {namespace: "team-b", owner: "envoyconfig/legate-system/gw"},
		"platform, shared with everyone":   {namespace: "team-b", owner: "envoyconfig/legate-system/gw", shared: "*", ok: true},
		"platform, shared with the tenant": {namespace: "team-b", owner: "envoyconfig/legate-system/gw", shared: "team-a, team-b", ok: true},
		"platform, shared with another":    {namespace: "team-b", owner: "envoyconfig/legate-system/gw", shared: "team-a,team-bb"},
		"a tenant cannot share its own":    {namespace: "team-b", owner: "envoyconfig/team-a/pay", shared: "*"},
		"platform's own proxies":           {namespace: "legate-system", owner: "envoyconfig/legate-system/gw", ok: true},
		"an owner that is no source name":  {namespace: "team-b", owner: "git/main"},
	} {
		t.Run(name, func(t *testing.T) {
			err := rule.MayReceive(tc.namespace, "pay-edge", tc.owner, tc.shared)
			if tc.ok {
				assert.NoError(t, err)
				return
			}
			if assert.Error(t, err) {
				assert.NotContains(t, err.Error(), "team-a", "nothing of the owner is told")
				assert.NotContains(t, err.Error(), "legate-system")
			}
		})
	}
}

// The node ID policy for nodes nobody owns yet.
func TestMayTake(t *testing.T) {
	free := Rule{Home: "legate-system", Policy: NodeIDsFirstCome}
	prefixed := Rule{Home: "legate-system", Policy: NodeIDsNamespacePrefix}
	assert.NoError(t, free.MayTake("team-b", "pay-edge"))
	assert.NoError(t, prefixed.MayTake("team-b", "team-b.edge"))
	assert.NoError(t, prefixed.MayTake("legate-system", "anything"))
	assert.ErrorContains(t, prefixed.MayTake("team-b", "team-a.edge"), `does not begin with "team-b."`)
	assert.Error(t, prefixed.MayTake("team-b", "team-bb.edge"), "a longer namespace's prefix is not the namespace's")
	assert.Error(t, prefixed.MayTake("team-b", "team-b-edge"))
}

// An object naming another namespace's node is refused at admission,
// one naming its own namespace's (or a free one) is admitted.
func TestMayConfigure(t *testing.T) {
	rule := Rule{Home: "legate-system", Policy: NodeIDsFirstCome}
	assert.NoError(t, rule.MayConfigure("envoyconfig/team-a/pay", "pay-edge", ""))
	assert.NoError(t, rule.MayConfigure("envoyconfig/team-a/pay", "pay-edge", "envoyconfig/team-a/pay"))
	assert.NoError(t, rule.MayConfigure("envoyconfig/team-a/two", "pay-edge", "envoysource/team-a/repo"), "within a namespace the pipeline reports the conflict")
	err := rule.MayConfigure("envoyconfig/team-b/squat", "pay-edge", "envoyconfig/team-a/pay")
	assert.ErrorContains(t, err, `node ID "pay-edge" belongs to another namespace`)
	assert.NotContains(t, err.Error(), "team-a")
	assert.Error(t, rule.MayConfigure("envoyconfig/legate-system/gw", "pay-edge", "envoyconfig/team-a/pay"), "the platform does not take a tenant's node either")
	prefixed := Rule{Home: "legate-system", Policy: NodeIDsNamespacePrefix}
	assert.Error(t, prefixed.MayConfigure("envoyconfig/team-b/squat", "team-a.edge", ""))
}

func TestShares(t *testing.T) {
	assert.True(t, Shares("*", "x"))
	assert.True(t, Shares("a, x ,b", "x"))
	assert.False(t, Shares("", "x"))
	assert.False(t, Shares("xx,y", "x"))
}

func TestParseNodeIDPolicy(t *testing.T) {
	p, err := ParseNodeIDPolicy("")
	assert.NoError(t, err)
	assert.Equal(t, NodeIDsFirstCome, p)
	p, err = ParseNodeIDPolicy("namespace-prefix")
	assert.NoError(t, err)
	assert.Equal(t, NodeIDsNamespacePrefix, p)
	_, err = ParseNodeIDPolicy("prefix")
	assert.ErrorContains(t, err, "first-come")
}
