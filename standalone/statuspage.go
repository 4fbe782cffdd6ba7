package standalone

import (
	"html/template"
	"io"
	"net/http"
	"time"
)

// statusPage is the human view of the status API at GET /: sources, nodes,
// their revision history with taints, and the connected proxies. It
// refreshes itself; html/template escapes every value (commit messages and
// proxies' error texts are user input).
var statusPage = template.Must(template.New("status").Funcs(template.FuncMap{
	"short": func(s string) string {
		if len(s) > 12 {
			return s[:12]
		}
		return s
	},
	"timeRef": func(t time.Time) *time.Time { return &t },
	"at": func(t *time.Time) string {
		if t == nil || t.IsZero() {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	},
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="5">
<title>legate status</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border-bottom:1px solid #ddd;padding:.25em .8em;text-align:left;vertical-align:top}
code{font-size:13px}.err{color:#b00020}.state{font-weight:600}
.InSync{color:#1b7f3b}.Rollback,.RollbackFailed{color:#b00020}.Degraded,.Pending{color:#9a6700}
</style></head><body>
<h1>legate</h1>
<h2>Sources</h2>
<table><tr><th>source</th><th>kind</th><th>url</th><th>revision</th><th>applied</th><th>nodes</th><th>last fetch</th><th>error</th></tr>
{{range .Sources}}<tr><td>{{.Name}}</td><td>{{.Kind}}</td><td><code>{{.URL}}</code></td><td><code>{{.Revision}}</code></td><td><code>{{.AppliedRevision}}</code></td>
<td>{{range $i, $n := .Nodes}}{{if $i}}, {{end}}{{$n}}{{end}}</td><td>{{at .LastFetch}}</td>
<td class="err">{{.LastError}}{{range .Diagnostics}}<br><code>{{.}}</code>{{end}}</td></tr>
{{else}}<tr><td colspan="8">no sources</td></tr>{{end}}</table>
<h2>Nodes</h2>
{{range .Nodes}}
<h3>{{.NodeID}} <span class="state {{.State}}">{{.State}}</span></h3>
<p>published: {{with .Published}}<code>{{short .Hash}}</code> version <code>{{.Version}}</code> from <code>{{.Revision}}</code>{{else}}nothing{{end}};
proxies: {{.Answers.Connected}} connected, {{.Answers.Accepted}} accepted, {{.Answers.Rejected}} rejected</p>
{{with .Waiting}}<p class="err">waiting to serve <code>{{short .Hash}}</code> from <code>{{.Revision}}</code> since {{at (timeRef .Since)}}: {{.Message}}</p>{{end}}
<table><tr><th>revision</th><th>origin</th><th>created</th><th>published</th><th>taint</th></tr>
{{range .History}}<tr><td><code>{{short .Hash}}</code></td><td><code>{{.Revision}}</code></td><td>{{at (timeRef .CreatedAt)}}</td><td>{{at .PublishedAt}}</td>
<td class="err">{{if .Taint}}{{.Taint.Message}}{{end}}</td></tr>{{end}}</table>
{{if .Proxies}}<table><tr><th>proxy</th><th>stream</th><th>connected since</th><th>type</th><th>sent</th><th>ACKed</th><th>last NACK</th></tr>
{{range $p := .Proxies}}{{range .Types}}<tr><td>{{$p.Proxy}}</td><td>{{$p.Stream}}</td><td>{{at (timeRef $p.ConnectedSince)}}</td>
<td><code>{{.TypeURL}}</code></td><td><code>{{.SentVersion}}</code></td><td><code>{{.AckedVersion}}</code></td>
<td class="err">{{with .LastNACK}}{{.Version}}: {{.Error}}{{end}}</td></tr>{{end}}{{end}}</table>{{end}}
{{else}}<p>no nodes yet</p>{{end}}
<p>JSON: <a href="api/v1/nodes">/api/v1/nodes</a>, <a href="api/v1/sources">/api/v1/sources</a>; <a href="metrics">/metrics</a></p>
</body></html>
`))

// writeStatusPage renders the page for the given state.
func writeStatusPage(w io.Writer, nodes []NodeView, srcs []SourceStatus) error {
	return statusPage.Execute(w, struct {
		Nodes   []NodeView
		Sources []SourceStatus
	}{nodes, srcs})
}

func (s *Server) serveStatusPage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := writeStatusPage(w, s.Nodes(), s.Sources()); err != nil {
		s.log.Error(err, "render status page")
	}
}
