package render

import (
	"context"
	"io/fs"
	"time"

	"google.golang.org/protobuf/proto"
)

// Default limits applied when an Options field is zero.
const (
	DefaultMaxFileSize  = 10 << 20
	DefaultMaxTotalSize = 256 << 20
	DefaultMaxFiles     = 10000
)

// Options tune a render. The zero value is valid.
type Options struct {
	// DefaultNode is the node ID of resources whose file names no node by
	// the directory convention, a legate.yaml or the document itself
	// (`legate validate --node`). Empty means such resources are an error.
	DefaultNode string
	// MaxFileSize is the largest input file read, in bytes
	// (default DefaultMaxFileSize).
	MaxFileSize int64
	// MaxTotalSize bounds the bytes read from all files together
	// (default DefaultMaxTotalSize).
	MaxTotalSize int64
	// MaxFiles bounds the number of configuration files read
	// (default DefaultMaxFiles).
	MaxFiles int
	// MaxResources bounds the resources decoded, all nodes together
	// (default DefaultMaxResources).
	MaxResources int
	// Timeout bounds the wall time of the render's own work (default
	// DefaultTimeout); a render past it is rejected with a limit
	// diagnostic.
	Timeout time.Duration
	// Context, when set, stops the render when it ends (a caller that
	// gave up on it): the render returns a limit diagnostic at its next
	// check and keeps nothing of its work. Generators are not stopped
	// from inside; the render stops between them.
	Context context.Context
	// MaxExpansion bounds what YAML aliases and merge keys may add to the
	// render beyond what its input holds itself, in bytes of what the
	// render holds for the values they expand to (default
	// DefaultMaxExpansion). A render over it stops with a limit
	// diagnostic at the value that crossed it.
	MaxExpansion int64
	// Generators add documents made from the tree by another language (CUE),
	// before decoding. They run in order.
	Generators []Generator
	// EndpointSlices says that the home builds load assignments from
	// Kubernetes EndpointSlices (MARIN3R's generateFromEndpointSlices);
	// where it does not, such entries are warned about.
	EndpointSlices bool
	// Checks run after decoding, PGV and reference checks, on every decoded
	// resource; their diagnostics join the others.
	Checks []Check
}

func (o Options) withDefaults() Options {
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	if o.MaxTotalSize <= 0 {
		o.MaxTotalSize = DefaultMaxTotalSize
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.MaxResources <= 0 {
		o.MaxResources = DefaultMaxResources
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxExpansion <= 0 {
		o.MaxExpansion = DefaultMaxExpansion
	}
	return o
}

// Document is one input file held in memory: a file of a tree, or the
// serialized EnvoyConfig object the Kubernetes home renders.
type Document struct {
	// Path names the document in diagnostics, e.g. "nodes/edge/routes.yaml"
	// or "namespace/name" for an object.
	Path string
	// Data is YAML or JSON, one or more documents.
	Data []byte
	// Nodes are the node IDs of the raw Envoy resources in Data that do not
	// name their node themselves. Nil means: use the nodes/<nodeID>/
	// convention on Path, then Options.DefaultNode.
	Nodes []string
	// Settings are the checks the repository tunes for this document (the
	// `strict:` of the nearest legate.yaml that has one).
	Settings Settings
	// Positions, when set, maps a 1-based line and column of Data to the
	// source the document was generated from (a .cue file for CUE
	// packages); diagnostics and resource sources are reported there. The
	// File of a returned Position is relative to the directory of Path, so
	// a caller that prefixes Path with a directory moves the sources along.
	Positions func(line, column int) (Position, bool)
}

// Settings tune how strict the renderer is where Envoy itself accepts a
// configuration that is likely wrong. The zero value is Envoy's verdict
// with warnings. In legate.yaml:
//
//	strict:
//	  missingClusters: error
type Settings struct {
	// MissingClusters is the severity of a route to a cluster that is not
	// defined, where Envoy accepts it (a route configuration delivered over
	// RDS without validate_clusters, a TCP proxy): "warning" (default) or
	// "error". Where Envoy rejects it, it is always an error.
	MissingClusters string
}

// Generator turns files that are not YAML or JSON (CUE packages) into
// documents. It must be pure: no network, no clock.
type Generator interface {
	// Generate reads fsys (nil when rendering in-memory documents) and
	// returns documents to render, or diagnostics naming what is wrong.
	Generate(fsys fs.FS) ([]Document, []Diagnostic)
}

// Check is an extra rule over every decoded resource, such as a CUE policy.
// It must be pure and must not keep or modify the messages it is given.
type Check interface {
	// Check returns a diagnostic for each violation; use Decoded.Locate to
	// give each one a position.
	Check(resources []*Decoded) []Diagnostic
}

// CheckFunc adapts a function to Check.
type CheckFunc func(resources []*Decoded) []Diagnostic

// Check calls f.
func (f CheckFunc) Check(resources []*Decoded) []Diagnostic { return f(resources) }

// Decoded is one decoded, PGV-valid resource handed to a Check.
type Decoded struct {
	// Nodes are the node IDs the resource belongs to.
	Nodes []string
	// TypeURL is the xDS type URL, Name the resource name.
	TypeURL string
	Name    string
	// Message is the decoded resource. Read-only.
	Message proto.Message
	// Source is where the resource starts.
	Source Position

	it *item
}

// Locate returns the position of a field path inside the resource
// ("virtual_hosts[0].routes[2].route.cluster"), falling back to the nearest
// enclosing field that exists in the input, then to Source.
func (d *Decoded) Locate(field string) Position {
	if d.it == nil {
		return d.Source
	}
	return d.it.locate(field)
}

// Diagnose builds a diagnostic for a field of the resource, for Checks.
func (d *Decoded) Diagnose(field, rule, message string) Diagnostic {
	node := ""
	if len(d.Nodes) == 1 {
		node = d.Nodes[0]
	}
	return Diagnostic{
		Pos: d.Locate(field), Node: node, Type: d.TypeURL, Name: d.Name,
		Field: field, Rule: rule, Message: message,
	}
}
