package standalone

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/sources/hooks"
)

// TestMonorepoPushRendersOnlyTheSourceItTouched runs two sources on two
// directories of one repository. A signed push whose commit changes only
// the first directory moves both sources to the new commit (every commit
// gets its verdict) and renders only the first: the second's content is
// the same, so it is neither rendered nor published again. The two sources
// share one clone of the repository, and a clone no source uses is removed.
func TestMonorepoPushRendersOnlyTheSourceItTouched(t *testing.T) {
	repo := newLocalRepo(t)
	write := func(dir, node, cluster string) {
		p := filepath.Join(repo.dir, dir, "nodes", node, "cluster.yaml")
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(t, os.WriteFile(p, []byte(strings.ReplaceAll(clusterDoc, "%s", cluster)), 0o600))
	}
	write("east", "edge-east", "one")
	write("west", "edge-west", "one")
	repo.git("add", "-A")
	repo.git("commit", "-q", "-m", "both")
	first := repo.git("rev-parse", "HEAD")

	secretFile := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secretFile, []byte("generic-secret-123\n"), 0o600))
	stateDir := t.TempDir()
	// A clone of the layout before sources shared theirs: no source
	// uses it now, and the server removes it when it starts.
	stale := filepath.Join(stateDir, "git", "east-c20eecc85eb0")
	require.NoError(t, os.MkdirAll(filepath.Join(stale, "objects"), 0o700))
	s := newServer(t, serveconfig.Config{
		StateDir: stateDir,
		Sources: []serveconfig.SourceConfig{
			{Name: "east", Git: &serveconfig.GitSource{URL: repo.dir, Path: "east"}, Interval: serveconfig.Duration{Duration: time.Hour}},
			{Name: "west", Git: &serveconfig.GitSource{URL: repo.dir, Path: "west"}, Interval: serveconfig.Duration{Duration: time.Hour}},
		},
		Webhooks: serveconfig.WebhookConfig{Generic: sources.Secret{File: secretFile}},
	}, Options{})
	runServer(t, s)
	commits := func() map[string]string {
		out := map[string]string{}
		for _, st := range s.Sources() {
			out[st.Name] = st.Commit
		}
		return out
	}
	require.Eventually(t, func() bool {
		c := commits()
		return c["east"] == first && c["west"] == first && renders(t, s, "east") == 1 && renders(t, s, "west") == 1
	}, 30*time.Second, 10*time.Millisecond, "both sources render the first commit once")
	published := func(node string) string {
		v, ok := s.Engine().Node(node)
		if !ok || v.Published == nil {
			return ""
		}
		return v.Published.Hash
	}
	westHash := published("edge-west")
	require.NotEmpty(t, westHash)

	write("east", "edge-east", "two")
	repo.git("add", "-A")
	repo.git("commit", "-q", "-m", "east only")
	second := repo.git("rev-parse", "HEAD")
	body := []byte(`{"url": "` + repo.dir + `", "ref": "refs/heads/main"}`)
	mac := hmac.New(sha256.New, []byte("generic-secret-123"))
	mac.Write(body)
	req, err := http.NewRequest(http.MethodPost, "http://"+s.HTTPAddr()+"/hooks/generic", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set(hooks.GenericSignatureHeader, "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)

	require.Eventually(t, func() bool {
		c := commits()
		return c["east"] == second && c["west"] == second && renders(t, s, "east") == 2
	}, 30*time.Second, 10*time.Millisecond, "the push moves both sources to the new commit and renders the one it touched")
	assert.Equal(t, 1, renders(t, s, "west"), "the untouched directory is not rendered again")
	assert.Equal(t, westHash, published("edge-west"), "the untouched node keeps its revision")

	// The two sources of the repository keep one clone between them.
	clones, err := os.ReadDir(filepath.Join(stateDir, "git"))
	require.NoError(t, err)
	require.Len(t, clones, 1, "one clone for the two sources of one repository, the stale one removed")
	assert.True(t, strings.HasPrefix(clones[0].Name(), "shared-"), clones[0].Name())
}

// renders reads how many renders of source the server's /metrics counts.
func renders(t *testing.T, s *Server, source string) int {
	t.Helper()
	resp, err := http.Get("http://" + s.HTTPAddr() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^legate_render_duration_seconds_count\{source="` + regexp.QuoteMeta(source) + `"\} (\d+)$`).FindSubmatch(body)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(string(m[1]))
	require.NoError(t, err)
	return n
}
