package statuspage

import (
	"cmp"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/revisions"
)

// The status page is rendered from a page model that this file computes
// from the API's views: every decision (what is served, which error to
// show once, where a commit links to) is made here, in plain Go, and the
// template only lays it out.

type pageModel struct {
	Sources []sourceRow
	Nodes   []nodeCard
	Legend  []legendEntry
	// Counts is "2 InSync, 1 Rollback".
	Counts string
	// Replica names this replica and its role, with several.
	Replica string
}

type legendEntry struct{ State, Meaning string }

type sourceRow struct {
	Name, Kind, URL      string
	Fetched, Applied     string
	FetchedLink          string
	AppliedSame          bool
	Nodes, LastFetch     string
	Suspended            bool
	Rejection, LastError string
	Diagnostics          []string
	MoreDiagnostics      int
	Healthy              bool
}

type link struct{ Text, Href, Title string }

type nodeCard struct {
	ID, State, Meaning, Summary string
	ProxyCount                  string
	Orphaned, NoProxies         bool
	Served                      *servedInfo
	Attempt                     *attemptInfo
	Waiting                     string
	History                     []historyRow
	Proxies                     []proxyRow
}

type servedInfo struct {
	Hash, Version string
	Commit        link
}

type attemptInfo struct {
	Commit         link
	Verdict, Class string
	Error          string
	SameAsServed   bool
}

type historyRow struct {
	Hash            string
	Served, Tainted bool
	Commit          link
	Message, Author string
	Source, Created string
	Taint           string
	TaintShownAbove bool
}

type proxyRow struct {
	Name, Identity, Address, UserAgent, Stream, Since string
	Types                                             []typeRow
}

type typeRow struct {
	Type              string
	Sent, Acked       string
	SentRev, AckedRev string
	NACK              string
}

// maxPageDiagnostics bounds the validation messages listed per source.
const maxPageDiagnostics = 5

// buildPage computes the page from the views. forges maps a source name
// to its forge provider (empty when unknown); now dates relative times.
func buildPage(nodes []NodeView, srcs []Source, forges map[string]forge.Provider, now time.Time) pageModel {
	var m pageModel
	srcURL := map[string]string{}
	for _, s := range srcs {
		srcURL[s.Name] = s.URL
		row := sourceRow{
			Name: s.Name, Kind: s.Kind, URL: s.URL, Fetched: shortRevision(s.Revision), Applied: shortRevision(s.AppliedRevision),
			AppliedSame: s.Revision != "" && s.Revision == s.AppliedRevision, Nodes: strings.Join(s.Nodes, ", "),
			LastFetch: relTime(s.LastFetch, now), Suspended: s.Suspended, Rejection: s.Rejection,
		}
		row.FetchedLink = commitURL(s.URL, forges[s.Name], s.Commit)
		// The first diagnostic is part of LastError: list the diagnostics
		// under a heading instead of printing it twice.
		if len(s.Diagnostics) > 0 {
			row.LastError = "validation failed:"
			row.Diagnostics = s.Diagnostics[:min(len(s.Diagnostics), maxPageDiagnostics)]
			row.MoreDiagnostics = len(s.Diagnostics) - len(row.Diagnostics)
		} else {
			row.LastError = s.LastError
		}
		row.Healthy = row.LastError == "" && row.Rejection == ""
		m.Sources = append(m.Sources, row)
	}
	counts := map[revisions.State]int{}
	for _, n := range nodes {
		counts[n.State]++
		m.Nodes = append(m.Nodes, nodeCardOf(n, srcURL, forges, now))
	}
	var parts []string
	for _, sm := range StateMeanings {
		m.Legend = append(m.Legend, legendEntry{string(sm.State), sm.Meaning})
		if c := counts[sm.State]; c > 0 {
			parts = append(parts, plural(c, string(sm.State), string(sm.State)))
		}
	}
	m.Counts = strings.Join(parts, ", ")
	return m
}

func nodeCardOf(n NodeView, srcURL map[string]string, forges map[string]forge.Provider, now time.Time) nodeCard {
	c := nodeCard{
		ID: n.NodeID, State: string(n.State), Meaning: StateMeaning(n.State), Summary: n.Summary,
		Orphaned: n.Orphaned, NoProxies: len(n.Proxies) == 0, ProxyCount: plural(len(n.Proxies), "proxy", "proxies"),
	}
	commitLink := func(source, sha string) link {
		return link{Text: cmp.Or(revisions.Short(sha), "-"), Title: sha, Href: commitURL(srcURL[source], forges[source], sha)}
	}
	if p := n.Published; p != nil {
		c.Served = &servedInfo{Hash: revisions.Short(p.Hash), Version: p.Version, Commit: commitLink(p.Source, p.Commit)}
	}
	source := ""
	if len(n.History) > 0 {
		source = n.History[0].Source
	}
	if a := n.Attempt; a != nil {
		c.Attempt = &attemptInfo{
			Commit: commitLink(source, a.Commit), Verdict: a.Verdict, Class: verdictClass(a.Verdict), Error: a.Error,
			SameAsServed: n.Published != nil && a.Hash == n.Published.Hash,
		}
	}
	if w := n.Waiting; w != nil {
		c.Waiting = "revision " + revisions.Short(w.Hash) + " waits to be served since " + relTime(&w.Since, now) + ": " + w.Message
	}
	for _, r := range n.History {
		row := historyRow{
			Hash: revisions.Short(r.Hash), Served: n.Published != nil && r.Hash == n.Published.Hash, Tainted: r.Tainted,
			Commit: commitLink(r.Source, r.Commit), Message: firstLine(r.Message), Author: authorName(r.Author),
			Source: r.Source, Created: relTime(&r.CreatedAt, now),
		}
		if r.Taint != nil {
			row.Taint = r.Taint.Message
			// The newest attempt shows this error already.
			row.TaintShownAbove = n.Attempt != nil && n.Attempt.Hash == r.Hash && n.Attempt.Error == r.Taint.Message
		}
		c.History = append(c.History, row)
	}
	for _, p := range n.Proxies {
		pr := proxyRow{
			Name: p.Proxy, Identity: p.Identity, Address: p.Address, UserAgent: p.UserAgent, Stream: p.Stream,
			Since: relTime(&p.ConnectedSince, now),
		}
		for _, t := range p.Types {
			tr := typeRow{
				Type: t.TypeURL[strings.LastIndex(t.TypeURL, ".")+1:], Sent: t.SentVersion, Acked: t.AckedVersion,
				SentRev: snapshotRevision(t.SentSnapshot), AckedRev: snapshotRevision(t.AckedSnapshot),
			}
			if t.LastNACK != nil {
				tr.NACK = t.LastNACK.Version + ": " + t.LastNACK.Error
			}
			pr.Types = append(pr.Types, tr)
		}
		c.Proxies = append(c.Proxies, pr)
	}
	return c
}

// snapshotRevision is the revision hash prefix of a publication version
// ("<hash12>-<generation>").
func snapshotRevision(v string) string {
	h, _, ok := strings.Cut(v, "-")
	if !ok {
		return ""
	}
	return h
}

func verdictClass(v string) string {
	switch v {
	case VerdictServed:
		return "ok"
	case VerdictRejectedByProxies, VerdictRejectedValidation:
		return "bad"
	default:
		return "warn"
	}
}

// commitURL links a commit on its forge, when the source's URL is a web
// forge's (http(s), ssh or scp-like); "" otherwise.
func commitURL(repoURL string, provider forge.Provider, sha string) string {
	if sha == "" || repoURL == "" {
		return ""
	}
	var host, path string
	if u, err := url.Parse(repoURL); err == nil && u.Host != "" {
		switch u.Scheme {
		case "http", "https":
			host = u.Scheme + "://" + u.Host
		case "ssh", "git":
			host = "https://" + u.Hostname()
		default:
			return ""
		}
		path = u.Path
	} else if at, rest, ok := strings.Cut(repoURL, "@"); ok && !strings.Contains(at, "/") && strings.Contains(rest, ":") {
		h, p, _ := strings.Cut(rest, ":")
		host, path = "https://"+h, "/"+p
	} else {
		return ""
	}
	path = strings.TrimSuffix(strings.TrimSuffix(path, "/"), ".git")
	if path == "" || path == "/" {
		return ""
	}
	sep := "/commit/"
	if provider == forge.ProviderGitLab || (provider == "" && strings.Contains(host, "gitlab")) {
		sep = "/-/commit/"
	}
	return host + path + sep + url.PathEscape(sha)
}

// shortRevision abbreviates the SHA of a Flux revision.
func shortRevision(rev string) string {
	if i := strings.LastIndex(rev, ":"); i >= 0 && len(rev)-i-1 > 12 {
		return rev[:i+13]
	}
	return rev
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if len(line) > 120 {
		line = line[:117] + "…"
	}
	return line
}

// authorName drops the e-mail address of "Name <mail>".
func authorName(a string) string {
	if i := strings.Index(a, " <"); i > 0 {
		return a[:i]
	}
	return a
}

// relTime is how long ago t was, "-" for none.
func relTime(t *time.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return HumanDuration(now.Sub(*t)) + " ago"
}

// HumanDuration prints d the way a person reads it, in at most two
// consecutive units: "10y", "90d", "1d2h", "5h3m", "42s".
func HumanDuration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	if d < time.Second {
		return "0s"
	}
	const day = 24 * time.Hour
	units := []struct {
		size time.Duration
		name string
	}{{365 * day, "y"}, {day, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}}
	var b strings.Builder
	shown := 0
	for _, u := range units {
		n := d / u.size
		switch {
		case n > 0 && shown < 2:
			b.WriteString(strconv.FormatInt(int64(n), 10) + u.name)
			d -= n * u.size
			shown++
		case shown > 0:
			shown = 2 // 1y5h would hide the days: stop at the gap
		}
	}
	return b.String()
}
