package standalone

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/logging"
	"github.com/legate-dev/legate/serveconfig"
)

// logLine is one JSON log record.
type logLine struct {
	Level, Msg string
	Nodes      []string
}

func parseLogs(t *testing.T, out string) []logLine {
	t.Helper()
	var lines []logLine
	for l := range strings.Lines(out) {
		var rec struct {
			Level string   `json:"level"`
			Msg   string   `json:"msg"`
			Nodes []string `json:"nodes"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &rec), l)
		lines = append(lines, logLine{rec.Level, rec.Msg, rec.Nodes})
	}
	return lines
}

// levelOf returns the level of the first record whose message starts with
// msg, or "".
func levelOf(lines []logLine, msg string) string {
	for _, l := range lines {
		if strings.HasPrefix(l.Msg, msg) {
			return l.Level
		}
	}
	return ""
}

// TestLogsTellTheTruthAtTheirLevel walks a source through a good commit, a
// commit its proxy rejects (taint and rollback), a revert to the rejected
// content and an invalid commit, and checks what the log says of each and
// at which level.
func TestLogsTellTheTruthAtTheirLevel(t *testing.T) {
	repo := newLocalRepo(t)
	repo.commit("a")
	var out syncBuffer
	log, err := logging.New(&out, "info", "json")
	require.NoError(t, err)
	s := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), DefaultNode: "edge",
		Sources: []serveconfig.SourceConfig{{Name: "cfg", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}, Options{Log: log})
	runServer(t, s)
	state := func() string {
		n, _ := s.engine.Node("edge")
		return string(n.State)
	}
	require.Eventually(t, func() bool { return state() != "" }, 30*time.Second, 10*time.Millisecond)
	startProxy(t, s.XDSAddr(), "edge", "pod-1", "backend-b")
	require.Eventually(t, func() bool { return state() == "InSync" }, 30*time.Second, 10*time.Millisecond)

	repo.commit("b")
	require.True(t, s.Trigger("cfg"))
	require.Eventually(t, func() bool { return state() == "Rollback" }, 30*time.Second, 10*time.Millisecond)

	// The same rejected content again, from a new commit.
	repo.commit("a")
	repo.commit("b")
	require.True(t, s.Trigger("cfg"))
	require.Eventually(t, func() bool {
		return levelOf(parseLogs(t, out.String()), "commit carries content the proxies rejected before") != ""
	}, 30*time.Second, 10*time.Millisecond, "the revert to tainted content is logged: %s", out.String())

	require.NoError(t, os.WriteFile(filepath.Join(repo.dir, "cluster.yaml"), []byte("{ not yaml"), 0o600))
	repo.git("commit", "-qam", "broken")
	require.True(t, s.Trigger("cfg"))
	require.Eventually(t, func() bool {
		return levelOf(parseLogs(t, out.String()), "commit rejected by validation") != ""
	}, 30*time.Second, 10*time.Millisecond)

	lines := parseLogs(t, out.String())
	assert.Equal(t, "WARN", levelOf(lines, "commit rejected by validation"))
	assert.Equal(t, "ERROR", levelOf(lines, "proxies rejected the revision"))
	assert.Equal(t, "WARN", levelOf(lines, "proxy rejected a response"))
	assert.Equal(t, "WARN", levelOf(lines, "rolled back"))
	assert.Equal(t, "WARN", levelOf(lines, "commit carries content the proxies rejected before"))
	// "configuration applied" is said exactly of the commits whose content
	// was served, "a" and "b", never of the revert to "b".
	applied := 0
	for _, l := range lines {
		if l.Msg == "configuration applied" {
			applied++
			assert.Equal(t, "INFO", l.Level)
			assert.Equal(t, []string{"edge"}, l.Nodes)
		}
	}
	assert.Equal(t, 2, applied, "%s", out.String())
}

// TestLostConflictIsNotLoggedAsApplied runs two sources rendering one
// node: the one refused logs a warning naming the owner, and no
// "configuration applied" without nodes.
func TestLostConflictIsNotLoggedAsApplied(t *testing.T) {
	one, two := newLocalRepo(t), newLocalRepo(t)
	one.commit("a")
	two.commit("b")
	var out syncBuffer
	log, err := logging.New(&out, "info", "json")
	require.NoError(t, err)
	s := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), DefaultNode: "shared",
		Sources: []serveconfig.SourceConfig{
			{Name: "one", Git: &serveconfig.GitSource{URL: one.dir}, Interval: serveconfig.Duration{Duration: time.Hour}},
			{Name: "two", Git: &serveconfig.GitSource{URL: two.dir}, Interval: serveconfig.Duration{Duration: time.Hour}},
		},
	}, Options{Log: log})
	runServer(t, s)
	require.Eventually(t, func() bool {
		return levelOf(parseLogs(t, out.String()), "node is rendered by another source") != ""
	}, 30*time.Second, 10*time.Millisecond, "%s", out.String())
	require.Eventually(t, s.Ready, 30*time.Second, 10*time.Millisecond)
	lines := parseLogs(t, out.String())
	assert.Equal(t, "WARN", levelOf(lines, "node is rendered by another source"))
	assert.Equal(t, "WARN", levelOf(lines, "commit applied to no node"))
	applied := 0
	for _, l := range lines {
		if l.Msg == "configuration applied" {
			applied++
			assert.Equal(t, []string{"shared"}, l.Nodes, "only the owner says it applied, and names the node")
		}
	}
	assert.Equal(t, 1, applied, "%s", out.String())
}
