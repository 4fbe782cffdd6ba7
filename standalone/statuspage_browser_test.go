package standalone

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"image"
	"image/png"
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

	"github.com/legate-dev/legate/pipeline/nodestate"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/serveconfig"
)

var updateScreenshots = flag.Bool("update-screenshots", false, "write the status page screenshots to docs/")

// widths are the windows the page must fit without horizontal scrolling:
// a laptop's and a phone's (390 px, an iPhone's CSS width).
var widths = []int{1280, 390}

// layoutProbe measures the loaded page in the browser and records the
// result on <body data-layout>, which --dump-dom then prints: the scroll
// width, the wanted elements that are not visible, the elements wider
// than the window, the text squeezed to a letter or two per line, and the
// elements that must be on the first screen but are not.
const layoutProbe = `<script>
(function () {
  var out = {scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth, hidden: [], squeezed: [], below: []};
  var wanted = JSON.parse(document.currentScript.dataset.wanted);
  var first = JSON.parse(document.currentScript.dataset.first);
  wanted.forEach(function (sel) {
    var el = document.querySelector(sel);
    var r = el && el.getBoundingClientRect();
    var style = el && getComputedStyle(el);
    var seen = el && (!el.checkVisibility || el.checkVisibility({visibilityProperty: true, opacityProperty: true}));
    if (!el || !seen || r.width === 0 || r.height === 0 || r.right > window.innerWidth + 0.5 || style.visibility === "hidden") {
      out.hidden.push(sel);
    }
  });
  first.forEach(function (sel) {
    var el = document.querySelector(sel);
    if (!el || el.getBoundingClientRect().top >= window.innerHeight) { out.below.push(sel); }
  });
  var wide = [];
  document.querySelectorAll("body *").forEach(function (el) {
    if (el.getBoundingClientRect().right > window.innerWidth + 0.5) { wide.push(el.tagName + "." + el.className); }
  });
  out.wide = wide.slice(0, 10);
  // A text of 8 characters or more laid out on more lines than half its
  // length runs one letter per line: its column is too narrow.
  var walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (var n = walk.nextNode(); n; n = walk.nextNode()) {
    var text = n.textContent.trim();
    if (text.length < 8 || !n.parentElement || !n.parentElement.checkVisibility()) { continue; }
    var range = document.createRange();
    range.selectNodeContents(n);
    var lines = {};
    Array.prototype.forEach.call(range.getClientRects(), function (r) { lines[Math.round(r.top)] = true; });
    if (Object.keys(lines).length * 2 > text.length) { out.squeezed.push(text.slice(0, 40)); }
  }
  out.squeezed = out.squeezed.slice(0, 10);
  // In a phone-sized frame (see frameHost) the host page is what
  // --dump-dom prints.
  (window.parent !== window ? window.parent.document.body : document.body).setAttribute("data-layout", JSON.stringify(out));
})();
</script>`

type layout struct {
	ScrollWidth int      `json:"scrollWidth"`
	InnerWidth  int      `json:"innerWidth"`
	Hidden      []string `json:"hidden"`
	Wide        []string `json:"wide"`
	Squeezed    []string `json:"squeezed"`
	Below       []string `json:"below"`
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

// minWindow is the narrowest window headless Chromium opens.
const minWindow = 500

// frameHost shows the page in a frame of a given width and height.
const frameHost = `<!doctype html><html><body style="margin:0;background:#fff"><iframe src="/page" style="border:0;display:block;width:%spx;height:%spx"></iframe></body></html>`

// cropWidth keeps the left width pixels of the PNG at path: the frame,
// without the rest of the window.
func cropWidth(t *testing.T, path string, width int) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	img, err := png.Decode(f)
	_ = f.Close()
	require.NoError(t, err)
	r := img.Bounds()
	require.GreaterOrEqual(t, r.Dx(), width)
	sub, ok := img.(interface {
		SubImage(image.Rectangle) image.Image
	})
	require.True(t, ok, "a PNG decodes to an image with SubImage")
	out, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, png.Encode(out, sub.SubImage(image.Rect(r.Min.X, r.Min.Y, r.Min.X+width, r.Max.Y))))
	require.NoError(t, out.Close())
}

// view is what one state of the page must show: the elements that must
// be visible at every width, and those that must be on the first screen
// (the problems, so that a broken fleet's first screen differs from a
// healthy one's).
type view struct {
	name          string
	wanted, first []string
}

// check loads the live status page of s at each width with the probe
// added, asserts that it does not overflow horizontally, that no text
// runs a letter per line, that every wanted selector is visible and every
// first one on the first screen, and takes a screenshot per width
// (docs/<name>-<width>.png with -update-screenshots).
func (b browser) check(s *Server, v view) {
	b.t.Helper()
	resp, err := http.Get("http://" + s.HTTPAddr() + "/")
	require.NoError(b.t, err)
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(b.t, err)
	want, err := json.Marshal(v.wanted)
	require.NoError(b.t, err)
	first, err := json.Marshal(v.first)
	require.NoError(b.t, err)
	probe := strings.Replace(layoutProbe, "<script>", `<script data-wanted="`+html.EscapeString(string(want))+`" data-first="`+html.EscapeString(string(first))+`">`, 1)
	page := strings.Replace(string(body), "</body>", probe+"</body>", 1)
	page = strings.Replace(page, `<meta http-equiv="refresh" content="10">`, "", 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, page)
	})
	mux.HandleFunc("/frame/{width}/{height}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = fmt.Fprintf(w, frameHost, r.PathValue("width"), r.PathValue("height"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	// Headless Chromium's window is at least 500 px wide: a narrower
	// width is a frame of that width, whose viewport the page's media
	// queries and the probe see, inside a wider window.
	url := func(width, height int) string {
		if width < minWindow {
			return fmt.Sprintf("%s/frame/%d/%d", srv.URL, width, height)
		}
		return srv.URL + "/page"
	}

	for _, width := range widths {
		name := fmt.Sprintf("%s-%d", v.name, width)
		height := 900
		if width < 600 {
			height = 844 // a phone's first screen
		}
		dom := b.run(fmt.Sprintf("--window-size=%d,%d", max(width, minWindow), height), "--dump-dom", url(width, height))
		m := layoutAttr.FindStringSubmatch(dom)
		require.NotNil(b.t, m, "%s: the probe did not run: %.2000s", name, dom)
		var got layout
		require.NoError(b.t, json.Unmarshal([]byte(html.UnescapeString(m[1])), &got))
		assert.Equal(b.t, width, got.InnerWidth, name)
		assert.LessOrEqual(b.t, got.ScrollWidth, got.InnerWidth, "%s: the page scrolls horizontally; too wide: %v", name, got.Wide)
		assert.Empty(b.t, got.Hidden, "%s: elements not visible", name)
		assert.Empty(b.t, got.Squeezed, "%s: text runs a letter per line", name)
		assert.Empty(b.t, got.Below, "%s: not on the first screen", name)

		dir := b.t.TempDir()
		if *updateScreenshots {
			dir = filepath.Join("..", "docs") // tests run in the package directory
		}
		shot := filepath.Join(dir, "status-"+name+".png")
		shotHeight := 1100
		if width < 600 {
			shotHeight = 1600
		}
		b.run(fmt.Sprintf("--window-size=%d,%d", max(width, minWindow), shotHeight), "--screenshot="+shot, url(width, shotHeight))
		if width < minWindow {
			cropWidth(b.t, shot, width)
		}
		fi, err := os.Stat(shot)
		require.NoError(b.t, err)
		assert.Positive(b.t, fi.Size())
	}
}

// TestStatusPageInABrowser walks a node through a healthy commit, an
// invalid commit (Rejected), and a commit its proxy rejects (rollback),
// with a second proxy whose bootstrap misspells the node ID, and checks
// the live page in headless Chromium at 1280 and 390 px each time.
func TestStatusPageInABrowser(t *testing.T) {
	b := findBrowser(t)
	repo := newLocalRepo(t)
	write := func(name, message string) {
		require.NoError(t, os.WriteFile(filepath.Join(repo.dir, "cluster.yaml"), []byte(strings.ReplaceAll(clusterDoc, "%s", name)), 0o600))
		repo.git("add", "-A")
		repo.git("commit", "-q", "-m", message)
	}
	write("a", "Add the backend cluster")
	s := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), DefaultNode: "edge",
		Sources: []serveconfig.SourceConfig{{Name: "config", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}, Options{})
	runServer(t, s)
	require.Eventually(t, func() bool { return len(s.Nodes()) == 1 }, 30*time.Second, 10*time.Millisecond)
	startProxy(t, s.XDSAddr(), "edge", "edge-7d9f8-x2x4q", "backend-b")
	state := func() revisions.State { v, _ := s.view(t, "edge"); return v.State }
	require.Eventually(t, func() bool { return state() == revisions.StateInSync }, 30*time.Second, 10*time.Millisecond)
	b.check(s, view{
		name:   "healthy",
		wanted: []string{`[data-node="edge"] .badge.state`, `[data-node="edge"] tr.served`, ".proxies", `[data-source="config"]`, "#states"},
		first:  []string{"#banner.ok", `[data-node="edge"] .badge.state`},
	})

	require.NoError(t, os.WriteFile(filepath.Join(repo.dir, "cluster.yaml"), []byte("\"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\nname: backend-c\ntype: STATIK\n"), 0o600))
	repo.git("commit", "-qam", "Switch the backend to a typo")
	require.True(t, s.Trigger("config"))
	require.Eventually(t, func() bool { return state() == nodestate.Rejected }, 30*time.Second, 10*time.Millisecond)
	b.check(s, view{
		name:   "rejected",
		wanted: []string{`[data-node="edge"] .attempt .badge.bad`, `[data-node="edge"] .first-error`, `[data-node="edge"] .next`, `[data-source="config"] .problem .mono`},
		first:  []string{"#banner.bad", `[data-node="edge"][data-state="Rejected"] .badge.state`},
	})

	write("b", "Route /api to the new backend cluster")
	require.True(t, s.Trigger("config"))
	require.Eventually(t, func() bool { return state() == revisions.StateRollback }, 30*time.Second, 10*time.Millisecond)
	startProxy(t, s.XDSAddr(), "egde", "edge-typo-5c6b7", "")
	require.Eventually(t, func() bool { v, ok := s.view(t, "egde"); return ok && len(v.Proxies) == 1 }, 30*time.Second, 10*time.Millisecond)
	b.check(s, view{
		name: "rollback",
		wanted: []string{
			`[data-node="edge"] .attempt .badge.bad`, `[data-node="edge"] .first-error`, `[data-node="edge"] .next`,
			`[data-node="edge"] tr.served`, `[data-node="edge"] tr.tainted`, `[data-source="config"] .problem .err`, `[data-node="egde"] .summary`,
		},
		first: []string{"#banner.bad", `[data-node="edge"][data-state="Rollback"] .badge.state`},
	})
}
