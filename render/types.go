package render

import (
	"fmt"
	"path"
	"strings"
)

// Position points into an input file. Line and Column are 1-based; zero
// means unknown.
type Position struct {
	File   string `json:"file"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
}

// InDir names p's file from the repository root when the renderer read
// the tree under dir (a source's path): an author opens the file named.
func (p Position) InDir(dir string) Position {
	if d := strings.Trim(dir, "/"); d != "" && d != "." && p.File != "" {
		p.File = path.Join(d, p.File)
	}
	return p
}

func (p Position) String() string {
	switch {
	case p.Line > 0 && p.Column > 0:
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column)
	case p.Line > 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	default:
		return p.File
	}
}

// Resource is one rendered Envoy resource in canonical form.
type Resource struct {
	// Name is the resource name xDS clients subscribe to.
	Name string `json:"name"`
	// Body is the deterministic protobuf wire encoding of the resource
	// message (not wrapped in an Any). Equal content gives equal bytes.
	Body []byte `json:"body"`
	// Source is where the resource was defined.
	Source Position `json:"source"`
}

// TypeSet is every resource of one xDS type for one node, sorted by name.
type TypeSet struct {
	// Hash is the content hash of the set (hex SHA-256 over names and bodies).
	Hash      string     `json:"hash"`
	Resources []Resource `json:"resources"`
}

// NodeConfig is the rendered configuration of one node ID.
type NodeConfig struct {
	NodeID string `json:"nodeID"`
	// Hash is the content hash of the whole configuration: equal content
	// gives an equal hash whatever the file layout or key order.
	Hash string `json:"hash"`
	// Types maps an xDS type URL (for example
	// "type.googleapis.com/envoy.config.cluster.v3.Cluster") to its set.
	// Types without resources are absent.
	Types map[string]TypeSet `json:"types"`
	// ExternalSecrets names the SDS secrets the home must supply (Kubernetes
	// Secrets, files); they are never part of the rendered content.
	ExternalSecrets []ExternalSecret `json:"externalSecrets,omitempty"`
	// ExternalEndpoints names the load assignments the home builds from
	// Kubernetes EndpointSlices; like external secrets, they are not part
	// of the rendered content, so an endpoint change is no new revision.
	ExternalEndpoints []ExternalEndpoints `json:"externalEndpoints,omitempty"`
}

// ExternalEndpoints is a cluster's load assignment made from the
// EndpointSlices a label selector picks (MARIN3R's
// generateFromEndpointSlices).
type ExternalEndpoints struct {
	// ClusterName is the name of the ClusterLoadAssignment served.
	ClusterName string `json:"clusterName"`
	// Namespace holds the EndpointSlices; empty until the home scopes the
	// render (the namespace of the object or source).
	Namespace string `json:"namespace,omitempty"`
	// Selector is the label selector in its canonical text form
	// ("app=api,tier in (a,b)").
	Selector string `json:"selector"`
	// TargetPort is the name (or number) of the EndpointSlice port used;
	// empty takes a slice's only port.
	TargetPort string   `json:"targetPort,omitempty"`
	Source     Position `json:"source"`
}

// ExternalSecret is a secret a configuration refers to by name whose key
// material the home supplies.
type ExternalSecret struct {
	// Name is the SDS secret name resources refer to.
	Name string `json:"name"`
	// Ref is the reference to resolve, for example "namespace/secret" for a
	// Kubernetes Secret or a file path in standalone mode.
	Ref string `json:"ref"`
	// Key is the entry of an "opaque" secret's data to use (MARIN3R's
	// generateFromOpaqueSecret.key); empty for the other kinds.
	Key string `json:"key,omitempty"`
	// Kind says how to build the secret: "tls", "opaque" or "validation".
	Kind   string   `json:"kind"`
	Source Position `json:"source"`
}

// Diagnostic is one problem found in the input, compiler-style.
type Diagnostic struct {
	Pos Position `json:"pos"`
	// Node, Type and Name identify the resource when known.
	Node string `json:"node,omitempty"`
	Type string `json:"type,omitempty"`
	Name string `json:"name,omitempty"`
	// Field is the field path inside the resource, e.g.
	// "virtual_hosts[0].routes[2].route.cluster".
	Field string `json:"field,omitempty"`
	// Rule names the check that failed, e.g. "reference", "pgv", "decode".
	Rule    string `json:"rule"`
	Message string `json:"message"`
	// Severity is SeverityError (also when empty) or SeverityWarning: a
	// warning names something Envoy accepts but that is likely a mistake;
	// it does not reject the configuration.
	Severity string `json:"severity,omitempty"`
}

// Severities of a Diagnostic.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// IsWarning reports whether d is a warning rather than an error.
func (d Diagnostic) IsWarning() bool { return d.Severity == SeverityWarning }

// Result is the outcome of rendering a tree: per-node configurations when
// there are no errors, and every error otherwise (syntax errors first, then
// by file, line and column). Warnings are reported either way.
type Result struct {
	Nodes map[string]*NodeConfig `json:"nodes"`
	// Diagnostics are the errors: any one rejects the configuration.
	Diagnostics []Diagnostic `json:"diagnostics,omitempty"`
	// Warnings are what Envoy accepts but the author likely did not mean
	// (a route to a cluster that does not exist, delivered over RDS).
	Warnings []Diagnostic `json:"warnings,omitempty"`
}

// OK reports whether rendering found no problems.
func (r *Result) OK() bool { return len(r.Diagnostics) == 0 }
