package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/statuspage"
	"github.com/legate-dev/legate/test/internal/gitrepo"
	"github.com/legate-dev/legate/test/internal/legateproc"
)

const (
	waitFor   = 20 * time.Second
	pollEvery = 20 * time.Millisecond
)

// legate is a `legate serve` subprocess following a local repository.
// Restarts keep its state directory and addresses, as a restarted service
// would.
type legate struct {
	t        *testing.T
	args     []string
	xdsAddr  string
	httpAddr string
	logPath  string
	stateDir string

	proc *legateproc.Proc
}

type legateOptions struct {
	// threshold is --taint-threshold; 0 leaves the default (1.0).
	threshold float64
	// answerTimeout is --answer-timeout; 0 leaves the default (30s).
	answerTimeout time.Duration
	// args are more flags of legate serve.
	args []string
}

// serveRepo runs legate serve on repo with a fresh state directory and
// waits until it is ready.
func serveRepo(t *testing.T, repo *gitrepo.Repo, opts legateOptions) *legate {
	t.Helper()
	dir := t.TempDir()
	l := &legate{t: t, xdsAddr: legateproc.LoopbackAddr(t), httpAddr: legateproc.LoopbackAddr(t), logPath: filepath.Join(dir, "legate.log"), stateDir: filepath.Join(dir, "state")}
	l.args = []string{
		"serve",
		"--git-url", repo.Dir, "--git-ref", "main",
		"--state-dir", l.stateDir,
		"--xds-addr", l.xdsAddr, "--http-addr", l.httpAddr,
		// Only the fetch on start and explicit triggers: the poll must not
		// be what makes a test pass.
		"--interval", "1h",
	}
	if opts.threshold != 0 {
		l.args = append(l.args, "--taint-threshold", strconv.FormatFloat(opts.threshold, 'g', -1, 64))
	}
	if opts.answerTimeout != 0 {
		l.args = append(l.args, "--answer-timeout", opts.answerTimeout.String())
	}
	l.args = append(l.args, opts.args...)
	t.Cleanup(func() {
		l.kill()
		if t.Failed() {
			if data, err := os.ReadFile(l.logPath); err == nil {
				t.Logf("legate log:\n%s", tail(data, 60))
			}
		}
	})
	l.start()
	return l
}

func (l *legate) start() {
	l.t.Helper()
	logf, err := os.OpenFile(l.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(l.t, err)
	defer logf.Close()
	l.proc, err = legateproc.Start(legateBin, l.args, logf)
	require.NoError(l.t, err)
	l.proc.WaitReady(l.t, l.url("/readyz"), waitFor, pollEvery)
}

// stop ends the process with sig and waits for it. After SIGTERM it must
// exit cleanly.
func (l *legate) stop(sig syscall.Signal) {
	l.t.Helper()
	require.NoError(l.t, l.proc.Signal(sig))
	select {
	case <-l.proc.Done():
	case <-time.After(waitFor):
		require.FailNow(l.t, "legate did not exit", "after %v", sig)
	}
	if sig == syscall.SIGTERM {
		require.True(l.t, l.proc.State().Success(), "graceful shutdown exits 0: %v", l.proc.State())
	}
}

// restart stops the process with sig and starts it again on the same
// state directory and addresses.
func (l *legate) restart(sig syscall.Signal) {
	l.t.Helper()
	l.stop(sig)
	l.start()
}

func (l *legate) kill() {
	if l.proc != nil {
		l.proc.Kill()
	}
}

func (l *legate) url(path string) string { return "http://" + l.httpAddr + path }

// getJSON decodes the answer of GET path. It returns errors instead of
// failing the test so that it can run in require.Eventually conditions.
func (l *legate) getJSON(path string, v any) error {
	resp, err := http.Get(l.url(path))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w: %s", path, err, body)
	}
	return nil
}

// node returns the status of the test's node from GET /api/v1/nodes.
func (l *legate) node() (statuspage.NodeView, error) {
	var nodes []statuspage.NodeView
	if err := l.getJSON("/api/v1/nodes", &nodes); err != nil {
		return statuspage.NodeView{}, err
	}
	for _, n := range nodes {
		if n.NodeID == nodeID {
			return n, nil
		}
	}
	return statuspage.NodeView{}, fmt.Errorf("legate has no node %q", nodeID)
}

// mustNode returns the test's node status, failing when there is none.
func (l *legate) mustNode() statuspage.NodeView {
	l.t.Helper()
	n, err := l.node()
	require.NoError(l.t, err)
	return n
}

// source returns the status of the flag-built source "default".
func (l *legate) source() (statuspage.Source, error) {
	var srcs []statuspage.Source
	if err := l.getJSON("/api/v1/sources", &srcs); err != nil {
		return statuspage.Source{}, err
	}
	for _, s := range srcs {
		if s.Name == "default" {
			return s, nil
		}
	}
	return statuspage.Source{}, fmt.Errorf("no source named default in %+v", srcs)
}

func (l *legate) mustSource() statuspage.Source {
	l.t.Helper()
	s, err := l.source()
	require.NoError(l.t, err)
	return s
}

// adminToken is the token legate serve made in its state directory.
func (l *legate) adminToken() string {
	l.t.Helper()
	data, err := os.ReadFile(filepath.Join(l.stateDir, serveconfig.AdminTokenName))
	require.NoError(l.t, err)
	return strings.TrimSpace(string(data))
}

// fetch asks legate to fetch the repository now and waits until it has
// fetched commit sha and finished with it (applied or rejected).
func (l *legate) fetch(sha string) {
	l.t.Helper()
	req, err := http.NewRequest(http.MethodPost, l.url("/api/v1/sources/default/fetch"), nil)
	require.NoError(l.t, err)
	req.Header.Set("Authorization", "Bearer "+l.adminToken())
	resp, err := http.DefaultClient.Do(req)
	require.NoError(l.t, err)
	resp.Body.Close()
	require.Equal(l.t, http.StatusAccepted, resp.StatusCode)
	require.Eventually(l.t, func() bool {
		s, err := l.source()
		return err == nil && s.Commit == sha
	}, waitFor, pollEvery, "legate fetches %s", sha)
}

// waitNode waits until the node status satisfies ok and returns it. On
// timeout the failure shows the last status.
func (l *legate) waitNode(what string, ok func(statuspage.NodeView) bool) statuspage.NodeView {
	l.t.Helper()
	var last statuspage.NodeView
	require.EventuallyWithT(l.t, func(c *assert.CollectT) {
		n, err := l.node()
		if err != nil {
			c.Errorf("%v", err)
			return
		}
		last = n
		if !ok(n) {
			b, _ := json.MarshalIndent(n, "", "  ")
			c.Errorf("node status is not %s yet:\n%s", what, b)
		}
	}, waitFor, pollEvery, "node becomes %s", what)
	return last
}

// metric returns the value of one series of /metrics, e.g.
// `legate_xds_nacks_total{type="envoy.config.cluster.v3.Cluster"}`; 0 when
// the series is absent.
func (l *legate) metric(series string) (float64, error) {
	resp, err := http.Get(l.url("/metrics"))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(rest), 64)
		}
	}
	return 0, sc.Err()
}

func (l *legate) mustMetric(series string) float64 {
	l.t.Helper()
	v, err := l.metric(series)
	require.NoError(l.t, err)
	return v
}

func tail(data []byte, lines int) []byte {
	all := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(all) > lines {
		all = append([][]byte{[]byte(fmt.Sprintf("… %d earlier lines", len(all)-lines))}, all[len(all)-lines:]...)
	}
	return bytes.Join(all, []byte("\n"))
}
