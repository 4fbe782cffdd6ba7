package statuspage

import (
	"html/template"
	"io"
	"time"

	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/revisions"
)

// statusPage is the human view of the status API at GET /: the node states
// with their meaning, per node what is served and the newest attempt to
// change it, its history with commits, and its proxies; the sources with
// what they fetched and applied. It is laid out for a 1280 px wide window
// and for a 390 px phone (tables stack, one block per row) without
// horizontal scrolling, opens with the problems (a banner, broken nodes
// first), refreshes itself, and
// html/template escapes every value (commit messages and proxies' error
// texts are user input).
var statusPage = template.Must(template.New("status").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="10">
<title>{{if .Problems}}⚠ {{end}}legate status</title>
<style>
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
main{max-width:1200px;margin:0 auto;padding:16px 20px 40px}
h1{font-size:22px;margin:4px 0 2px}h2{font-size:17px;margin:22px 0 8px}h3{font-size:16px;margin:0;overflow-wrap:anywhere}
.muted{color:#656d76}.small{font-size:12px}
code,.mono{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere}
table{width:100%;border-collapse:collapse;table-layout:fixed;background:#fff}
th,td{padding:5px 8px;text-align:left;vertical-align:top;border-bottom:1px solid #d8dee4;overflow-wrap:break-word}
th{font-weight:600;font-size:12px;color:#656d76;background:#f6f8fa}
.banner{border-radius:6px;padding:10px 14px;margin:10px 0;font-weight:600}
.banner.bad{background:#ffebe9;border:1px solid #ff8182;color:#82071e}.banner.ok{background:#dafbe1;border:1px solid #4ac26b;color:#116329}
.card{background:#fff;border:1px solid #d0d7de;border-left:6px solid #8c959f;border-radius:6px;padding:12px 14px;margin:12px 0}
.card.InSync{border-left-color:#1a7f37}.card.Pending,.card.Degraded,.card.Unconfigured{border-left-color:#bf8700}.card.Rollback,.card.RollbackFailed,.card.Rejected{border-left-color:#cf222e}
.card.Progressing{border-left-color:#0969da}.Progressing .badge.state{background:#ddf4ff;color:#0550ae}
.card.problem{border-color:#ff8182;border-left-width:8px}
.head{display:flex;flex-wrap:wrap;gap:8px;align-items:baseline}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;border:1px solid transparent;cursor:help;white-space:nowrap}
.InSync .badge.state,.badge.ok{background:#dafbe1;color:#116329}
.Pending .badge.state,.Degraded .badge.state,.Unconfigured .badge.state,.badge.warn{background:#fff8c5;color:#7d4e00}
.Rollback .badge.state,.RollbackFailed .badge.state,.Rejected .badge.state,.badge.bad{background:#ffebe9;color:#a40e26}
.badge.grey{background:#eaeef2;color:#424a53}
.summary{margin:6px 0}
.next{margin:8px 0;padding:8px 12px;background:#fff8c5;border:1px solid #d4a72c;border-radius:6px}
.next b{display:block;margin-bottom:2px}.next p{margin:2px 0}
.facts{display:grid;grid-template-columns:130px 1fr;gap:2px 10px;margin:8px 0}
.facts dt{color:#656d76}.facts dd{margin:0;overflow-wrap:break-word;min-width:0}
.err{color:#a40e26;white-space:pre-wrap;overflow-wrap:anywhere}
.warntext{color:#7d4e00;white-space:pre-wrap;overflow-wrap:anywhere}
tr.served td{background:#f0fff4}tr.served td:first-child{box-shadow:inset 3px 0 #1a7f37}
tr.tainted td{color:#6e7781}
details{margin-top:8px}summary{cursor:pointer;color:#0969da}
a{color:#0969da;text-decoration:none}a:hover{text-decoration:underline}
.legend{display:grid;grid-template-columns:140px 1fr;gap:4px 12px;background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:10px 14px}
/* Narrow windows (a phone at 390 px): tables become one block per row,
   each cell labelled, so that no fixed column overflows the card and no
   text runs one letter per line. */
@media (max-width:720px){
main{padding:10px 10px 30px}
.card{padding:10px}
.facts,.legend{grid-template-columns:1fr}.facts dt{margin-top:4px}.legend b{margin-top:6px}
table.stack,table.stack tbody,table.stack tr,table.stack td{display:block;width:auto}
table.stack colgroup,table.stack tr.labels{display:none}
table.stack tr{border-bottom:1px solid #d0d7de;padding:4px 0}
table.stack td{border:0;padding:2px 4px;display:grid;grid-template-columns:82px 1fr;gap:6px}
table.stack td>*{min-width:0}
table.stack td::before{content:attr(data-label);color:#656d76;font-size:12px;font-weight:600}
tr.served td:first-child{box-shadow:none}tr.served td{background:none}
tr.served{background:#f0fff4;box-shadow:inset 3px 0 #1a7f37}
}
</style></head><body><main>
<h1>legate</h1>
{{with .Replica}}<div class="replica">{{.}}</div>{{end}}
{{if .Problems}}<div class="banner bad" id="banner">needs attention: {{.Attention}}</div>
{{else if .Nodes}}<div class="banner ok" id="banner">all is well: {{.Counts}}</div>{{end}}
<div class="muted counts">{{with .Counts}}{{.}}{{else}}no nodes yet{{end}} · refreshes every 10 s · <a href="api/v1/nodes">nodes JSON</a> · <a href="api/v1/sources">sources JSON</a> · {{if .Rollouts}}<a href="api/v1/rollouts">rollouts JSON</a> · {{end}}<a href="metrics">metrics</a> · <a href="#states">what the states mean</a></div>

{{if .Rollouts}}<h2 id="rollouts">Rollouts</h2>
<table class="rollouts stack"><colgroup><col style="width:16%"><col style="width:11%"><col style="width:17%"><col style="width:17%"><col></colgroup>
<tr class="labels"><th>node</th><th>phase</th><th>step</th><th>proxies</th><th>waits for</th></tr>
{{range .Rollouts}}<tr data-rollout="{{.Node}}" class="rollout {{.Class}}"><td data-label="node"><span><a href="#node-{{.Node}}"><b>{{.Node}}</b></a><br><span class="small muted">revision <code>{{.Candidate}}</code> over <code>{{.Stable}}</code>{{if .Commit.Text}}, commit {{template "commit" .Commit}}{{end}}</span></span></td>
<td data-label="phase"><span><span class="badge {{.Class}}">{{.Phase}}</span></span></td>
<td data-label="step" class="step"><span>{{.Step}}{{with .Superseded}}<br><span class="small muted">superseded <code>{{.}}</code>, restarted at step 1</span>{{end}}</span></td>
<td data-label="proxies" class="side"><span>{{.Side}}</span></td>
<td data-label="waits for" class="wait"><span{{if .Problem}} class="err"{{end}}>{{.Wait}}</span></td></tr>
{{end}}</table>{{with .MoreRollouts}}<p class="muted">and {{.}} more (<a href="api/v1/rollouts">rollouts JSON</a>)</p>{{end}}
{{end}}
<h2>Nodes</h2>
{{range .Nodes}}{{$node := .ID}}
<section class="card {{.State}}{{if .Problem}} problem{{end}}" id="node-{{.ID}}" data-node="{{.ID}}" data-state="{{.State}}">
<div class="head"><h3>{{.ID}}</h3>
<span class="badge state" title="{{.Meaning}}">{{.State}}</span>
{{if .NoProxies}}<span class="badge grey" title="no proxy of this node is connected to legate">no proxy connected</span>{{end}}
{{if .Orphaned}}<span class="badge bad" title="no configured source renders this node any more; legate prune stops serving it">orphaned</span>{{end}}
</div>
<p class="summary">{{.Summary}}</p>
{{if ne .State "Unconfigured"}}<dl class="facts">
<dt>served</dt><dd>{{with .Served}}revision <code>{{.Hash}}</code> from {{template "commit" .Commit}} <span class="muted small">(xDS version <code>{{.Version}}</code>)</span>{{else}}nothing{{end}}</dd>
{{with .Attempt}}<dt>{{.Label}}</dt><dd class="attempt">{{template "commit" .Commit}} <span class="badge {{.Class}}">{{.Verdict}}</span>{{if .SameAsServed}} <span class="muted small">(the served revision)</span>{{end}}
{{with .Error}}<div class="err first-error">{{.}}</div>{{end}}</dd>{{end}}
{{with .Waiting}}<dt>waiting</dt><dd class="err">{{.}}</dd>{{end}}
{{with .Rollout}}<dt>rollout</dt><dd class="rollout"><a href="#rollouts">{{.}}</a></dd>{{end}}
</dl>{{end}}
{{with .Next}}<div class="next"><b>What to do</b>{{range .}}<p>{{.}}</p>{{end}}</div>{{end}}
{{if .History}}<table class="history stack"><colgroup><col style="width:150px"><col style="width:130px"><col><col style="width:130px"><col style="width:115px"><col style="width:22%"></colgroup>
<tr class="labels"><th>revision</th><th>commit</th><th>message</th><th>author</th><th>created</th><th>verdict</th></tr>
{{range .History}}<tr id="rev-{{$node}}-{{.Hash}}" class="{{if .Served}}served{{end}}{{if .Tainted}} tainted{{end}}"><td data-label="revision"><span><code>{{.Hash}}</code>{{if .Served}} <span class="badge ok" title="the revision the proxies are served now">served</span>{{end}}</span></td>
<td data-label="commit"><span>{{template "commit" .Commit}}</span></td><td data-label="message"><span>{{.Message}}</span></td><td data-label="author"><span>{{.Author}}</span></td><td data-label="created"><span>{{.Created}}</span></td>
<td data-label="verdict"><span>{{if .Tainted}}{{if .TaintShownAbove}}<span class="err">rejected by proxies (error above)</span>{{else}}<span class="err">{{.Taint}}</span>{{end}}{{else if .Served}}served{{else}}<span class="muted">superseded</span>{{end}}</span></td></tr>
{{end}}</table>{{end}}
{{if .Proxies}}<details open><summary>{{.ProxyCount}} connected</summary>
<table class="proxies stack"><colgroup><col style="width:22%"><col style="width:16%"><col style="width:16%"><col></colgroup>
<tr class="labels"><th>proxy</th><th>address</th><th>agent</th><th>per type: sent / ACKed version (revision), last NACK</th></tr>
{{range .Proxies}}<tr><td data-label="proxy"><span><b>{{.Name}}</b>{{with .Identity}}<br><span class="small muted">certificate: {{.}}</span>{{end}}<br><span class="small muted">{{.Stream}} stream, connected {{.Since}}</span></span></td>
<td data-label="address" class="mono"><span>{{.Address}}</span></td><td data-label="agent"><span>{{.UserAgent}}</span></td>
<td data-label="types" class="small"><span>{{range .Types}}<div><b>{{.Type}}</b> <code>{{.Sent}}</code>{{with .SentRev}} (<a class="mono" href="#rev-{{$node}}-{{.}}">{{.}}</a>){{end}} / <code>{{.Acked}}</code>{{with .AckedRev}} (<a class="mono" href="#rev-{{$node}}-{{.}}">{{.}}</a>){{end}}{{with .NACK}} <span class="err">NACK {{.}}</span>{{end}}</div>{{end}}</span></td></tr>
{{end}}</table></details>{{end}}
</section>
{{else}}<p>no nodes yet</p>{{end}}

<h2>Sources</h2>
<table class="sources stack"><colgroup><col style="width:15%"><col style="width:16%"><col style="width:16%"><col style="width:10%"><col style="width:9%"><col></colgroup>
<tr class="labels"><th>source</th><th>fetched</th><th>applied</th><th>nodes</th><th>last fetch</th><th>problem</th></tr>
{{range .Sources}}<tr data-source="{{.Name}}"><td data-label="source"><span><b>{{.Name}}</b>{{if .Suspended}} <span class="badge warn">suspended</span>{{end}}<br><span class="small muted mono">{{.Kind}} {{.URL}}</span></span></td>
<td data-label="fetched"><code>{{if .FetchedLink}}<a href="{{.FetchedLink}}">{{.Fetched}}</a>{{else}}{{.Fetched}}{{end}}</code></td>
<td data-label="applied"><span>{{if .AppliedSame}}<span class="muted">same</span>{{else}}<code>{{.Applied}}</code>{{end}}</span></td>
<td data-label="nodes"><span>{{.Nodes}}</span></td><td data-label="last fetch"><span>{{.LastFetch}}</span></td>
<td data-label="problem" class="problem"><span>{{if and .Healthy (not .Warnings)}}<span class="muted">none</span>{{end}}{{with .Rejection}}<div class="err">{{.}}</div>{{end}}{{with .LastError}}<div class="err">{{.}}</div>{{end}}{{range .Diagnostics}}<div class="err mono">{{.}}</div>{{end}}{{with .Warnings}}<div class="warntext">accepted and served, with warnings:</div>{{range .}}<div class="warntext mono">{{.}}</div>{{end}}{{end}}{{with .MoreDiagnostics}}<div class="muted">and {{.}} more (legate validate shows them all)</div>{{end}}</span></td></tr>
{{else}}<tr><td colspan="6">no sources</td></tr>{{end}}</table>

<h2 id="states">What the states mean</h2>
<div class="legend">{{range .Legend}}<b>{{.State}}</b><span>{{.Meaning}}</span>{{end}}
<b>no proxy connected</b><span>no proxy of the node is connected now; a new revision stays Pending until one connects and answers</span>
<b>orphaned</b><span>no configured source renders the node any more; it keeps serving its last revision until <code>legate prune NODE</code></span></div>
</main></body></html>
{{define "commit"}}{{if .Href}}<a class="mono" href="{{.Href}}" title="{{.Title}}">{{.Text}}</a>{{else}}<code title="{{.Title}}">{{.Text}}</code>{{end}}{{end}}
`))

// Page is what the status page shows.
type Page struct {
	Nodes   []NodeView
	Sources []Source
	// Rollouts are the nodes' progressive rollouts, under way or the last
	// one (revisions.Engine.Rollouts); nil: the page shows none.
	Rollouts []revisions.RolloutView
	// Forges maps a source name to its forge provider, for commit links
	// (empty when unknown).
	Forges map[string]forge.Provider
	// Replica says, with several replicas, which one this is and its
	// role ("replica legate-0, leader").
	Replica string
	// Now dates relative times.
	Now time.Time
}

// Write renders the page to w.
func (p Page) Write(w io.Writer) error {
	m := buildPage(p.Nodes, p.Sources, p.Rollouts, p.Forges, p.Now)
	m.Replica = p.Replica
	return statusPage.Execute(w, m)
}
