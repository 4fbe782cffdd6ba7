package preview

import (
	"bytes"
	"cmp"
	"slices"
	"sort"
	"strings"

	"github.com/legate-dev/legate/render"
)

// Fleet is what one side of a comparison renders: per node ID its
// configuration, or the diagnostics that rejected the render.
type Fleet struct {
	// Nodes maps a node ID to its rendered configuration (render.Result's
	// Nodes, or what the engine serves now).
	Nodes map[string]*render.NodeConfig
	// Diagnostics are the errors of a render that failed; a fleet with any
	// is invalid and its Nodes are not compared.
	Diagnostics []render.Diagnostic
	// Warnings are what the render accepted but flagged (render.Result's
	// Warnings); the head's are reported.
	Warnings []render.Diagnostic
}

// FleetOf is the fleet a render gave.
func FleetOf(res *render.Result) Fleet {
	if res == nil {
		return Fleet{}
	}
	return Fleet{Nodes: res.Nodes, Diagnostics: res.Diagnostics, Warnings: res.Warnings}
}

// Default bounds of a report, used when an Options field is zero.
const (
	DefaultMaxNodes       = 200
	DefaultMaxDiffLines   = 80
	DefaultMaxBytes       = 1 << 20
	DefaultMaxDiagnostics = 20
)

// Options tune a comparison. The zero value is valid.
type Options struct {
	// BaseLabel and HeadLabel name the two sides in the report (a ref, a
	// commit); empty gives "base" and "head".
	BaseLabel, HeadLabel string
	// Proxies returns how many proxies are connected to node now (the
	// blast radius of changing it); a negative count, or a nil func, means
	// unknown.
	Proxies func(node string) int
	// MaxNodes bounds the nodes detailed in the report
	// (default DefaultMaxNodes); the others are counted.
	MaxNodes int
	// MaxDiffLines bounds the lines of each resource's diff
	// (default DefaultMaxDiffLines).
	MaxDiffLines int
	// MaxBytes bounds the diff text kept over all resources together
	// (default DefaultMaxBytes); past it resources are listed by name only.
	MaxBytes int
	// MaxDiagnostics bounds the head's diagnostics kept, and apart its
	// warnings (default DefaultMaxDiagnostics).
	MaxDiagnostics int
	// Dir is the directory inside the repository that both renders read
	// (a source's path): file names in the report are given from the
	// repository root, as an author opens them. Empty or "." is the root.
	Dir string
	// Notes are printed at the top of the report (for example that a pull
	// request from a fork was rendered without secrets).
	Notes []string
}

func (o Options) withDefaults() Options {
	o.BaseLabel = cmp.Or(o.BaseLabel, "base")
	o.HeadLabel = cmp.Or(o.HeadLabel, "head")
	for _, b := range []struct {
		v   *int
		def int
	}{{&o.MaxNodes, DefaultMaxNodes}, {&o.MaxDiffLines, DefaultMaxDiffLines}, {&o.MaxBytes, DefaultMaxBytes}, {&o.MaxDiagnostics, DefaultMaxDiagnostics}} {
		if *b.v <= 0 {
			*b.v = b.def
		}
	}
	return o
}

// Kinds of change of a node or a resource.
const (
	Added   = "added"
	Removed = "removed"
	Changed = "changed"
)

// Report is the outcome of a comparison. Its slices are in a stable order
// (nodes by ID, types by name, resources by name), so that two runs over
// the same input print the same report.
type Report struct {
	Base string `json:"base"`
	Head string `json:"head"`
	// Notes come from Options.Notes.
	Notes []string `json:"notes,omitempty"`
	// Invalid says the head did not render: Diagnostics says why, and
	// nothing was compared.
	Invalid bool `json:"invalid,omitempty"`
	// Diagnostics are the head's errors (at most Options.MaxDiagnostics),
	// DiagnosticsOmitted how many more there were.
	Diagnostics        []render.Diagnostic `json:"diagnostics,omitempty"`
	DiagnosticsOmitted int                 `json:"diagnosticsOmitted,omitempty"`
	// Warnings are the head's warnings (at most Options.MaxDiagnostics),
	// WarningsOmitted how many more there were.
	Warnings        []render.Diagnostic `json:"warnings,omitempty"`
	WarningsOmitted int                 `json:"warningsOmitted,omitempty"`
	// BaseInvalid says the base did not render: the head is compared with
	// an empty fleet.
	BaseInvalid bool `json:"baseInvalid,omitempty"`
	// Summary counts every node, listed or not.
	Summary Summary `json:"summary"`
	// Nodes are the nodes that differ, at most Options.MaxNodes;
	// NodesOmitted counts the others.
	Nodes        []NodeChange `json:"nodes"`
	NodesOmitted int          `json:"nodesOmitted,omitempty"`
	// DiffsOmitted counts resources listed by name only because the
	// report reached Options.MaxBytes of diff text.
	DiffsOmitted int `json:"diffsOmitted,omitempty"`
}

// Summary counts the nodes of a comparison by their change.
type Summary struct {
	Added     int `json:"added"`
	Removed   int `json:"removed"`
	Changed   int `json:"changed"`
	Unchanged int `json:"unchanged"`
}

// NodeChange is one node that differs between the two sides.
type NodeChange struct {
	Node string `json:"node"`
	// Change is Added, Removed or Changed.
	Change string `json:"change"`
	// Proxies connected to the node now; nil when unknown.
	Proxies *int         `json:"proxies,omitempty"`
	Types   []TypeChange `json:"types"`
}

// TypeChange lists the resources of one type that differ on a node.
type TypeChange struct {
	// Type is the message name ("Cluster"), or "secret reference" and
	// "endpoint slices" for what the home supplies by name.
	Type    string   `json:"type"`
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
	Changed []string `json:"changed,omitempty"`
	// Diffs are the unified diffs of the resources added, removed and
	// changed, in name order; a secret's is never made.
	Diffs []ResourceDiff `json:"diffs,omitempty"`
}

// ResourceDiff is the bounded diff of one resource, as YAML with Envoy's
// field names.
type ResourceDiff struct {
	Name   string `json:"name"`
	Change string `json:"change"`
	// Source is where the head defines the resource (where the base did,
	// for one removed).
	Source string `json:"source,omitempty"`
	// Diff is the unified diff; empty when Note says why there is none.
	Diff string `json:"diff,omitempty"`
	// LinesOmitted counts the diff lines cut at Options.MaxDiffLines.
	LinesOmitted int    `json:"linesOmitted,omitempty"`
	Note         string `json:"note,omitempty"`
}

// Changed reports whether the head differs from the base. An invalid
// head changes nothing: it cannot be published.
func (r *Report) Changed() bool {
	return !r.Invalid && r.Summary.Added+r.Summary.Removed+r.Summary.Changed > 0
}

// Compare compares the fleet head renders with base's, node by node.
func Compare(base, head Fleet, opts Options) *Report {
	opts = opts.withDefaults()
	r := &Report{Base: opts.BaseLabel, Head: opts.HeadLabel, Notes: opts.Notes, Nodes: []NodeChange{}}
	r.Warnings, r.WarningsOmitted = bounded(head.Warnings, opts)
	if len(head.Diagnostics) > 0 {
		r.Invalid = true
		r.Diagnostics, r.DiagnosticsOmitted = bounded(head.Diagnostics, opts)
		return r
	}
	baseNodes := base.Nodes
	if len(base.Diagnostics) > 0 {
		r.BaseInvalid, baseNodes = true, nil
	}
	c := comparer{opts: opts, budget: opts.MaxBytes}
	for _, id := range unionKeys(baseNodes, head.Nodes) {
		b, h := baseNodes[id], head.Nodes[id]
		var change string
		switch {
		case b == nil:
			change = Added
			r.Summary.Added++
		case h == nil:
			change = Removed
			r.Summary.Removed++
		case b.Hash == h.Hash && b.Hash != "":
			// Equal hashes are equal content: most nodes of a large fleet
			// are unchanged and cost no more than this.
			r.Summary.Unchanged++
			continue
		case len(r.Nodes) >= opts.MaxNodes && b.Hash != "" && h.Hash != "":
			// Past the nodes listed, different hashes are enough to count
			// a change: nothing is printed, so nothing is diffed.
			r.Summary.Changed++
			r.NodesOmitted++
			continue
		default:
			types := c.node(b, h)
			if len(types) == 0 {
				r.Summary.Unchanged++
				continue
			}
			r.Summary.Changed++
			if len(r.Nodes) >= opts.MaxNodes {
				r.NodesOmitted++
				continue
			}
			r.Nodes = append(r.Nodes, c.withProxies(NodeChange{Node: id, Change: Changed, Types: types}))
			continue
		}
		if len(r.Nodes) >= opts.MaxNodes {
			r.NodesOmitted++
			continue
		}
		r.Nodes = append(r.Nodes, c.withProxies(NodeChange{Node: id, Change: change, Types: c.node(b, h)}))
	}
	r.DiffsOmitted = c.omitted
	return r
}

// bounded sorts diagnostics, names their files from the repository root
// and keeps at most opts.MaxDiagnostics; it returns how many it left out.
func bounded(ds []render.Diagnostic, opts Options) ([]render.Diagnostic, int) {
	if len(ds) == 0 {
		return nil, 0
	}
	ds = render.SortDiagnostics(slices.Clone(ds))
	omitted := 0
	if len(ds) > opts.MaxDiagnostics {
		omitted = len(ds) - opts.MaxDiagnostics
		ds = ds[:opts.MaxDiagnostics]
	}
	for i := range ds {
		ds[i].Pos = ds[i].Pos.InDir(opts.Dir)
	}
	return ds, omitted
}

// comparer carries one comparison's bounds.
type comparer struct {
	opts    Options
	budget  int // diff bytes left
	omitted int
}

func (c *comparer) withProxies(n NodeChange) NodeChange {
	if c.opts.Proxies != nil {
		if p := c.opts.Proxies(n.Node); p >= 0 {
			n.Proxies = &p
		}
	}
	return n
}

// node compares one node's configurations; either may be nil (a node
// added or removed).
func (c *comparer) node(b, h *render.NodeConfig) []TypeChange {
	var bt, ht map[string]render.TypeSet
	if b != nil {
		bt = b.Types
	}
	if h != nil {
		ht = h.Types
	}
	urls := unionKeys(bt, ht)
	// Types by their short name, as a person reads them.
	sort.SliceStable(urls, func(i, j int) bool { return shortType(urls[i]) < shortType(urls[j]) })
	var out []TypeChange
	for _, u := range urls {
		bs, hs := bt[u], ht[u]
		if bs.Hash == hs.Hash && bs.Hash != "" {
			continue
		}
		if tc, ok := c.typeSet(u, bs.Resources, hs.Resources); ok {
			out = append(out, tc)
		}
	}
	secrets := func(nc *render.NodeConfig) []render.ExternalSecret { return nc.ExternalSecrets }
	if tc, ok := byName("secret reference", b, h, secrets, secretRef); ok {
		out = append(out, tc)
	}
	endpoints := func(nc *render.NodeConfig) []render.ExternalEndpoints { return nc.ExternalEndpoints }
	if tc, ok := byName("endpoint slices", b, h, endpoints, endpointRef); ok {
		out = append(out, tc)
	}
	return out
}

// typeSet compares the resources of one type, each side sorted by name.
func (c *comparer) typeSet(url string, bs, hs []render.Resource) (TypeChange, bool) {
	tc := TypeChange{Type: shortType(url)}
	i, j := 0, 0
	for i < len(bs) || j < len(hs) {
		switch {
		case j == len(hs) || (i < len(bs) && bs[i].Name < hs[j].Name):
			tc.Removed = append(tc.Removed, bs[i].Name)
			tc.Diffs = append(tc.Diffs, c.diff(url, &bs[i], nil))
			i++
		case i == len(bs) || hs[j].Name < bs[i].Name:
			tc.Added = append(tc.Added, hs[j].Name)
			tc.Diffs = append(tc.Diffs, c.diff(url, nil, &hs[j]))
			j++
		default:
			if !bytes.Equal(bs[i].Body, hs[j].Body) {
				tc.Changed = append(tc.Changed, hs[j].Name)
				tc.Diffs = append(tc.Diffs, c.diff(url, &bs[i], &hs[j]))
			}
			i++
			j++
		}
	}
	if len(tc.Added)+len(tc.Removed)+len(tc.Changed) == 0 {
		return tc, false
	}
	// Diffs in name order whatever the kind of change.
	sort.SliceStable(tc.Diffs, func(a, b int) bool { return tc.Diffs[a].Name < tc.Diffs[b].Name })
	return tc, true
}

// secretRef identifies a secret the home supplies by its name and what
// it refers to: a change of reference is shown, never what a secret holds.
func secretRef(s render.ExternalSecret) (string, string) {
	return s.Name, s.Kind + "\x00" + s.Ref + "\x00" + s.Key
}

// endpointRef identifies a load assignment the home builds from
// EndpointSlices by its cluster name and selection.
func endpointRef(e render.ExternalEndpoints) (string, string) {
	return e.ClusterName, e.Namespace + "\x00" + e.Selector + "\x00" + e.TargetPort
}

// byName compares what the home supplies to two node configurations
// (either may be nil), as list gives it, by the name and identity that id
// gives each entry.
func byName[T any](typ string, b, h *render.NodeConfig, list func(*render.NodeConfig) []T, id func(T) (name, key string)) (TypeChange, bool) {
	index := func(nc *render.NodeConfig) map[string]string {
		m := map[string]string{}
		if nc == nil {
			return m
		}
		for _, e := range list(nc) {
			n, k := id(e)
			m[n] = k
		}
		return m
	}
	bm, hm := index(b), index(h)
	tc := TypeChange{Type: typ}
	for _, n := range unionKeys(bm, hm) {
		bv, inB := bm[n]
		hv, inH := hm[n]
		switch {
		case !inB:
			tc.Added = append(tc.Added, n)
		case !inH:
			tc.Removed = append(tc.Removed, n)
		case bv != hv:
			tc.Changed = append(tc.Changed, n)
		}
	}
	return tc, len(tc.Added)+len(tc.Removed)+len(tc.Changed) > 0
}

// unionKeys is the sorted union of two maps' keys.
func unionKeys[V any](a, b map[string]V) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, dup := a[k]; !dup {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// shortType is the message name of a type URL ("Cluster").
func shortType(url string) string {
	return url[strings.LastIndex(url, ".")+1:]
}
