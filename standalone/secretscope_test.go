package standalone

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/sds"
)

func TestSecretScopeResolve(t *testing.T) {
	sc := secretScope{source: "team-a", grants: []string{"shared/*", "wildcard-cert"}}
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
			got, err := sc.resolve(tc.ref)
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
	assert.Empty(t, secretScope{source: "team-a"}.apply(res))
	assert.Equal(t, "team-a/edge-cert", nc.ExternalSecrets[0].Ref)
	assert.NotEqual(t, before, nc.Hash, "the hash follows the resolved ref, so a moved secret is a new revision")
	assert.Equal(t, render.HashNode(nc), nc.Hash)

	nc.ExternalSecrets = append(nc.ExternalSecrets,
		render.ExternalSecret{Name: "other", Ref: "team-b/cert", Kind: "tls", Source: render.Position{File: "edge.yaml", Line: 20}},
		render.ExternalSecret{Name: "dots", Ref: "team-a/..", Kind: "tls", Source: render.Position{File: "a.yaml", Line: 3}})
	diags := secretScope{source: "team-a"}.apply(res)
	require.Len(t, diags, 2)
	assert.Equal(t, "a.yaml:3", diags[0].Pos.String(), "sorted by position")
	assert.Equal(t, RuleSecretScope, diags[1].Rule)
	assert.Contains(t, diags[1].Message, `secret "other": ref "team-b/cert" is outside what source "team-a" may use`)
}

func TestGrantShape(t *testing.T) {
	for _, ok := range []string{"shared/*", "ca", "team-?/ca"} {
		assert.NoError(t, grantShape(ok), ok)
	}
	for _, bad := range []string{"", "..", "a/../b", "a/b/c", "/abs", ".hidden", "a/[", "*/"} {
		assert.Error(t, grantShape(bad), bad)
	}
	err := Config{Sources: []SourceConfig{{Name: "a", Git: &GitSource{URL: "/r"}, Secrets: []string{"ok", "../etc"}}}}.Validate()
	assert.ErrorContains(t, err, "sources[0].secrets[1]")
}

// A configuration in one source's repository that names another source's
// secret is rejected as a whole, naming the source and the secret, and
// nothing is published; granting the secret to the source lets the same
// commit through.
func TestSecretOfAnotherSourceIsRefused(t *testing.T) {
	repo := newLocalRepo(t)
	doc := strings.Replace(marin3rTLS, "  name: edge\n", "  name: edge\n  namespace: team-b\n", 1)
	require.NoError(t, os.WriteFile(filepath.Join(repo.dir, "edge.yaml"), []byte(doc), 0o600))
	repo.git("add", "-A")
	repo.git("commit", "-q", "-m", "edge")
	secrets := t.TempDir()
	crt, key := selfSigned(t, "edge.example")
	writeSecret(t, secrets, "team-b/edge-cert", map[string][]byte{sds.TLSCertFile: crt, sds.TLSKeyFile: key})

	cfg := Config{
		StateDir: t.TempDir(), SecretsDir: secrets, XDSInsecureSecrets: []string{"*"},
		Sources: []SourceConfig{{Name: "team-a", Git: &GitSource{URL: repo.dir}, Interval: Duration{time.Hour}}},
	}
	s := newServer(t, cfg, Options{})
	runServer(t, s)
	var st SourceStatus
	require.Eventually(t, func() bool {
		st = s.Sources()[0]
		return st.LastError != ""
	}, 30*time.Second, 10*time.Millisecond, "the commit is rejected")
	assert.Contains(t, st.LastError, `secret "edge-cert": ref "team-b/edge-cert" is outside what source "team-a" may use`)
	assert.Contains(t, st.LastError, "edge.yaml:")
	_, ok := s.engine.Node("edge")
	assert.False(t, ok, "nothing is applied for the node")

	cfg.StateDir = t.TempDir()
	cfg.Sources[0].Secrets = []string{"team-b/edge-cert"}
	granted := newServer(t, cfg, Options{})
	runServer(t, granted)
	require.Eventually(t, func() bool {
		n, ok := granted.engine.Node("edge")
		return ok && n.Published != nil
	}, 30*time.Second, 10*time.Millisecond, "the granted secret is served")
	assert.Empty(t, granted.Sources()[0].LastError)
}
