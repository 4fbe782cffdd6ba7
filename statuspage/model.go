package statuspage

import (
	"cmp"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/pipeline/nodestate"
	"github.com/legate-dev/legate/revisions"
)

// The status page is rendered from a page model that this file computes
// from the API's views: every decision (what is served, which error to
// show once, where a commit links to) is made here, in plain Go, and the
// template only lays it out.

type pageModel struct {
	Sources []sourceRow
	Nodes   []nodeCard
	// Rollouts are the progressive rollouts, the most urgent first;
	// MoreRollouts counts those left out.
	Rollouts     []rolloutRow
	MoreRollouts int
	Legend       []legendEntry
	// Counts is "1 rolled back · 2 in sync", problems first.
	Counts string
	// Problems counts the nodes and sources that need a person, and
	// Attention says which ("1 rolled back · 1 source with a problem"):
	// the page opens with a banner saying so when there are any.
	Problems  int
	Attention string
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
	// Diagnostics are the errors of a rejected commit, Warnings those
	// of an accepted one; MoreDiagnostics counts either left out.
	Diagnostics, Warnings []string
	MoreDiagnostics       int
	Healthy               bool
}

type link struct{ Text, Href, Title string }

type nodeCard struct {
	ID, State, Meaning, Summary string
	// Problem marks a card that needs a person; Next says what to do.
	Problem             bool
	Next                []string
	Closest             []string
	ProxyCount          string
	Orphaned, NoProxies bool
	Served              *servedInfo
	Attempt             *attemptInfo
	Waiting             string
	// Rollout is the node's rollout in one line; RolloutClass colours it.
	Rollout, RolloutClass string
	History               []historyRow
	Proxies               []proxyRow
}

type servedInfo struct {
	Hash, Version string
	Commit        link
}

type attemptInfo struct {
	// Label is "newest commit", or "newest change" when it has none.
	Label          string
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
func buildPage(nodes []NodeView, srcs []Source, rollouts []revisions.RolloutView, forges map[string]forge.Provider, now time.Time) pageModel {
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
		shown := s.Diagnostics[:min(len(s.Diagnostics), maxPageDiagnostics)]
		switch {
		case s.Invalid && len(s.Diagnostics) > 0:
			// The first error is part of LastError: list the errors
			// under a heading instead of printing it twice.
			row.LastError = "validation failed:"
			row.Diagnostics = shown
		default:
			// The diagnostics of an accepted commit are its warnings:
			// it is served, so they are no problem of the source (no
			// banner), and a failed fetch since keeps its own error.
			row.LastError = s.LastError
			row.Warnings = shown
		}
		row.MoreDiagnostics = len(s.Diagnostics) - len(shown)
		row.Healthy = row.LastError == "" && row.Rejection == ""
		// The proxies' text is on the card of each node that rejected it:
		// the source says where, not the text a second time.
		if on := rejectedOn(nodes, s); row.Rejection != "" && len(on) > 0 {
			row.Rejection = "the proxies rejected commit " + revisions.Short(s.Commit) + " (rolled back): see node " + strings.Join(on, ", ")
		}
		m.Sources = append(m.Sources, row)
	}
	// Problems first: a broken node is the first card, so that the first
	// screen of a broken fleet never looks like a healthy one's.
	nodes = ProblemsFirst(nodes)
	states := make([]nodestate.State, 0, len(nodes))
	var problems []nodestate.State
	m.Rollouts, m.MoreRollouts = rolloutRows(rollouts, srcURL, forges, now)
	byNode := make(map[string]rolloutRow, len(m.Rollouts))
	for _, r := range m.Rollouts {
		byNode[r.Node] = r
	}
	for _, n := range nodes {
		states = append(states, n.State)
		if nodestate.Problem(n.State) {
			problems = append(problems, n.State)
		}
		c := nodeCardOf(n, srcURL, forges, now)
		if r, ok := byNode[n.NodeID]; ok {
			c.Rollout, c.RolloutClass = rolloutLine(r), r.Class
		}
		m.Nodes = append(m.Nodes, c)
	}
	for _, sm := range StateMeanings {
		m.Legend = append(m.Legend, legendEntry{string(sm.State), sm.Meaning})
	}
	m.Counts = nodestate.Counts(states)
	var attention []string
	if len(problems) > 0 {
		attention = append(attention, nodestate.Counts(problems))
	}
	failing := 0
	for _, s := range m.Sources {
		if !s.Healthy {
			failing++
		}
	}
	if failing > 0 {
		attention = append(attention, plural(failing, "source with a problem", "sources with a problem"))
	}
	m.Problems = len(problems) + failing
	m.Attention = strings.Join(attention, " · ")
	return m
}

func nodeCardOf(n NodeView, srcURL map[string]string, forges map[string]forge.Provider, now time.Time) nodeCard {
	c := nodeCard{
		ID: n.NodeID, State: string(n.State), Meaning: StateMeaning(n.State), Summary: n.Summary,
		Problem: nodestate.Problem(n.State), Next: NextSteps(n), Closest: n.Closest,
		Orphaned: n.Orphaned, NoProxies: len(n.Proxies) == 0, ProxyCount: plural(len(n.Proxies), "proxy", "proxies"),
	}
	// A revision from an EnvoyConfig object has no commit: its origin
	// ("default/edge@3", the object at generation 3) stands in for it.
	commitLink := func(source, sha, revision string) link {
		if sha == "" {
			return link{Text: cmp.Or(revision, "-"), Title: revision}
		}
		return link{Text: revisions.Short(sha), Title: sha, Href: commitURL(srcURL[source], forges[source], sha)}
	}
	if p := n.Published; p != nil {
		c.Served = &servedInfo{Hash: revisions.Short(p.Hash), Version: p.Version, Commit: commitLink(p.Source, p.Commit, p.Revision)}
	}
	source := ""
	if len(n.History) > 0 {
		source = n.History[0].Source
	}
	if a := n.Attempt; a != nil {
		c.Attempt = &attemptInfo{
			Label:  "newest commit",
			Commit: commitLink(source, a.Commit, a.Revision), Verdict: a.Verdict, Class: verdictClass(a.Verdict), Error: a.Error,
			SameAsServed: n.Published != nil && a.Hash == n.Published.Hash,
		}
		if a.Commit == "" {
			// An EnvoyConfig's generation, or an artifact with no commit.
			c.Attempt.Label = "newest change"
		}
	}
	if w := n.Waiting; w != nil {
		c.Waiting = "revision " + revisions.Short(w.Hash) + " waits to be served since " + relTime(&w.Since, now) + ": " + w.Message
	}
	for _, r := range n.History {
		row := historyRow{
			Hash: revisions.Short(r.Hash), Served: n.Published != nil && r.Hash == n.Published.Hash, Tainted: r.Tainted,
			Commit: commitLink(r.Source, r.Commit, r.Revision), Message: firstLine(r.Message), Author: authorName(r.Author),
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
				// The proxies' text is shown once, with the newest commit.
				if c.Attempt != nil && t.LastNACK.Error != "" && strings.Contains(c.Attempt.Error, t.LastNACK.Error) {
					tr.NACK = t.LastNACK.Version + " (the rejection above)"
				}
			}
			pr.Types = append(pr.Types, tr)
		}
		c.Proxies = append(c.Proxies, pr)
	}
	return c
}

// ProblemsFirst returns a copy of nodes sorted by urgency of their state
// (nodestate.Rank), then by ID.
func ProblemsFirst(nodes []NodeView) []NodeView {
	nodes = slices.Clone(nodes)
	slices.SortStableFunc(nodes, func(a, b NodeView) int {
		return cmp.Or(cmp.Compare(nodestate.Rank(a.State), nodestate.Rank(b.State)), cmp.Compare(a.NodeID, b.NodeID))
	})
	return nodes
}

// rejectedOn lists the nodes of src whose newest attempt the proxies
// rejected.
func rejectedOn(nodes []NodeView, src Source) []string {
	var on []string
	for _, n := range nodes {
		if a := n.Attempt; a != nil && a.Verdict == VerdictRejectedByProxies && len(n.History) > 0 && n.History[0].Source == src.Name {
			on = append(on, n.NodeID)
		}
	}
	return on
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

// NextSteps says what a person can do about a node that needs one; nil
// for a healthy node. The page and legate status say the same.
func NextSteps(n NodeView) []string {
	switch n.State {
	case nodestate.Rollback, nodestate.RollbackFailed:
		steps := []string{"Fix the configuration and commit: the new commit makes a new revision, which replaces the rejected one."}
		if a := n.Attempt; a != nil && a.FromEnvoyConfig() {
			steps[0] = "Fix the EnvoyConfig and apply it again: its new generation makes a new revision, which replaces the rejected one."
		}
		if a := n.Attempt; a != nil && a.Hash != "" && a.Verdict == VerdictRejectedByProxies {
			untaint := "legate untaint " + n.NodeID + " " + revisions.Short(a.Hash)
			if a.InCluster() {
				// In a cluster the revision is an object: legate untaint
				// reaches it through the API server.
				untaint += " --kubeconfig FILE"
			}
			steps = append(steps, "Or, if the proxies rejected it for a reason since fixed outside legate (a missing secret, an old Envoy): "+
				untaint+" re-publishes that revision; if the proxies still reject it, it is tainted again within seconds and the node rolls back again.")
		}
		return steps
	case nodestate.Rejected:
		if a := n.Attempt; a != nil && a.FromEnvoyConfig() {
			return []string{"Fix the EnvoyConfig and apply it again; legate validate FILE shows every error of its manifest, with lines, before you apply."}
		}
		return []string{"Fix the error above and commit; legate validate DIR shows every error before you push."}
	case nodestate.Degraded:
		return []string{"Some proxies rejected the revision (their NACK is under proxies): they run an older configuration than the others. Fix the configuration and commit."}
	case nodestate.Unconfigured:
		return []string{"Correct node.id in the proxy's bootstrap, or add a configuration for this node ID."}
	}
	return nil
}
