package standalone

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/sds"
	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/statuspage"
)

// A secrets grant of a bad shape is refused, naming the field.
func TestSecretsGrantShapeIsChecked(t *testing.T) {
	err := serveconfig.Config{Sources: []serveconfig.SourceConfig{{Name: "a", Git: &serveconfig.GitSource{URL: "/r"}, Secrets: []string{"ok", "../etc"}}}}.Validate()
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

	cfg := serveconfig.Config{
		StateDir: t.TempDir(), SecretsDir: secrets, XDSInsecureSecrets: []string{"*"},
		Sources: []serveconfig.SourceConfig{{Name: "team-a", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}
	s := newServer(t, cfg, Options{})
	runServer(t, s)
	var st statuspage.Source
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
