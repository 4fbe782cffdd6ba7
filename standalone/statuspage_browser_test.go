package standalone

import (
	"context"
	"encoding/json"
	"flag"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/statuspage"
)

var updateScreenshots = flag.Bool("update-screenshots", false, "write the status page screenshots to docs/")

// pageWidth is the window width the page must fit without horizontal
// scrolling.
const pageWidth = 1280

// layoutProbe measures the loaded page in the browser and records the
// result on <body data-layout>, which --dump-dom then prints.
const layoutProbe = `<script>
(function () {
  var out = {scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth, hidden: []};
  var wanted = JSON.parse(document.currentScript.dataset.wanted);
  wanted.forEach(function (sel) {
    var el = document.querySelector(sel);
    var r = el && el.getBoundingClientRect();
    var style = el && getComputedStyle(el);
    var seen = el && (!el.checkVisibility || el.checkVisibility({visibilityProperty: true, opacityProperty: true}));
    if (!el || !seen || r.width === 0 || r.height === 0 || r.right > window.innerWidth + 0.5 || style.visibility === "hidden") {
      out.hidden.push(sel);
    }
  });
  var wide = [];
  document.querySelectorAll("body *").forEach(function (el) {
    if (el.getBoundingClientRect().right > window.innerWidth + 0.5) { wide.push(el.tagName + "." + el.className); }
  });
  out.wide = wide.slice(0, 10);
  document.body.setAttribute("data-layout", JSON.stringify(out));
})();
</script>`

type layout struct {
	ScrollWidth int      `json:"scrollWidth"`
	InnerWidth  int      `json:"innerWidth"`
	Hidden      []string `json:"hidden"`
	Wide        []string `json:"wide"`
}

// browser is Debian's headless Chromium.
type browser struct {
	t    *testing.T
	path string
}

func findBrowser(t *testing.T) browser {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return browser{t: t, path: p}
		}
	}
	msg := "chromium is not available (apt-get install -y chromium)"
	if os.Getenv("LEGATE_REQUIRE_TOOLS") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return browser{}
}

func (b browser) run(args ...string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
		"--no-first-run", "--disable-extensions", "--user-data-dir=" + b.t.TempDir(),
	}
	cmd := exec.CommandContext(ctx, b.path, append(base, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(b.t, err, "chromium %v: %s", args, stderr.String())
	return string(out)
}

var layoutAttr = regexp.MustCompile(`data-layout="([^"]*)"`)

// check loads the live status page of s at 1280 px with the probe added,
// asserts that it does not overflow horizontally and that every selector
// in wanted is visible, and takes a screenshot named name.
func (b browser) check(s *Server, name string, wanted ...string) {
	b.t.Helper()
	resp, err := http.Get("http://" + s.HTTPAddr() + "/")
	require.NoError(b.t, err)
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(b.t, err)
	want, err := json.Marshal(wanted)
	require.NoError(b.t, err)
	probe := strings.Replace(layoutProbe, "<script>", `<script data-wanted="`+html.EscapeString(string(want))+`">`, 1)
	page := strings.Replace(string(body), "</body>", probe+"</body>", 1)
	page = strings.Replace(page, `<meta http-equiv="refresh" content="10">`, "", 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, page)
	}))
	defer srv.Close()

	size := "--window-size=1280,1000"
	dom := b.run(size, "--dump-dom", srv.URL)
	m := layoutAttr.FindStringSubmatch(dom)
	require.NotNil(b.t, m, "the probe did not run: %.2000s", dom)
	var got layout
	require.NoError(b.t, json.Unmarshal([]byte(html.UnescapeString(m[1])), &got))
	assert.Equal(b.t, pageWidth, got.InnerWidth, name)
	assert.LessOrEqual(b.t, got.ScrollWidth, got.InnerWidth, "%s: the page scrolls horizontally; too wide: %v", name, got.Wide)
	assert.Empty(b.t, got.Hidden, "%s: elements not visible", name)

	dir := b.t.TempDir()
	if *updateScreenshots {
		dir = filepath.Join("..", "docs") // tests run in the package directory
	}
	shot := filepath.Join(dir, name)
	b.run("--window-size=1280,1100", "--screenshot="+shot, "http://"+s.HTTPAddr()+"/")
	fi, err := os.Stat(shot)
	require.NoError(b.t, err)
	assert.Positive(b.t, fi.Size())
}

// TestStatusPageInABrowser walks a node through a healthy commit, a
// commit its proxy rejects (rollback) and an invalid commit, and checks
// the live page in headless Chromium at 1280 px each time.
func TestStatusPageInABrowser(t *testing.T) {
	b := findBrowser(t)
	repo := newLocalRepo(t)
	write := func(name, message string) {
		require.NoError(t, os.WriteFile(filepath.Join(repo.dir, "cluster.yaml"), []byte(strings.ReplaceAll(clusterDoc, "%s", name)), 0o600))
		repo.git("add", "-A")
		repo.git("commit", "-q", "-m", message)
	}
	write("a", "Add the backend cluster")
	s := newServer(t, Config{
		StateDir: t.TempDir(), DefaultNode: "edge",
		Sources: []SourceConfig{{Name: "config", Git: &GitSource{URL: repo.dir}, Interval: Duration{time.Hour}}},
	}, Options{})
	runServer(t, s)
	require.Eventually(t, func() bool { return len(s.Nodes()) == 1 }, 30*time.Second, 10*time.Millisecond)
	startProxy(t, s.XDSAddr(), "edge", "edge-7d9f8-x2x4q", "backend-b")
	state := func() revisions.State { v, _ := s.view(t, "edge"); return v.State }
	require.Eventually(t, func() bool { return state() == revisions.StateInSync }, 30*time.Second, 10*time.Millisecond)
	b.check(s, "status-healthy.png", `[data-node="edge"] .badge.state`, `[data-node="edge"] tr.served`, ".proxies", `[data-source="config"]`, "#states")

	write("b", "Route /api to the new backend cluster")
	require.True(t, s.Trigger("config"))
	require.Eventually(t, func() bool { return state() == revisions.StateRollback }, 30*time.Second, 10*time.Millisecond)
	b.check(s, "status-rollback.png", `[data-node="edge"] .attempt .badge.bad`, `[data-node="edge"] .first-error`,
		`[data-node="edge"] tr.served`, `[data-node="edge"] tr.tainted`, `[data-source="config"] .problem .err`)

	require.NoError(t, os.WriteFile(filepath.Join(repo.dir, "cluster.yaml"), []byte("\"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\nname: backend-c\ntype: STATIK\n"), 0o600))
	repo.git("commit", "-qam", "Switch the backend to a typo")
	require.True(t, s.Trigger("config"))
	require.Eventually(t, func() bool {
		v, _ := s.view(t, "edge")
		return v.Attempt != nil && v.Attempt.Verdict == statuspage.VerdictRejectedValidation
	}, 30*time.Second, 10*time.Millisecond)
	b.check(s, "status-rejected.png", `[data-node="edge"] .attempt .badge.bad`, `[data-node="edge"] .first-error`, `[data-source="config"] .problem .mono`)
}
