package sds

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/legate-dev/legate/render"
)

// RuleScope names the diagnostic of a secret reference outside what its
// source may use.
const RuleScope = "secret-scope"

// GrantShape checks one entry of a source's secrets grants: a ref or a
// path.Match pattern of one or two plain segments.
func GrantShape(g string) error {
	segs := strings.Split(g, "/")
	if g == "" || len(segs) > 2 {
		return fmt.Errorf("%q must be NAME or NAMESPACE/NAME, optionally with * or ? patterns", g)
	}
	for _, s := range segs {
		if s == "" || s == "." || s == ".." || strings.HasPrefix(s, ".") {
			return fmt.Errorf("%q: %q is not a plain name", g, s)
		}
	}
	if _, err := path.Match(g, ""); err != nil {
		return fmt.Errorf("%q is not a valid pattern: %w", g, err)
	}
	return nil
}

// Scope is what one source's configurations may reference: the secrets
// of its home (its own directory below the secrets directory in
// standalone mode, its namespace on Kubernetes) and those its grants name.
type Scope struct {
	// Source names the source in messages.
	Source string
	// Home is where a bare NAME resolves, and the one NAMESPACE a
	// NAMESPACE/NAME may name without a grant.
	Home string
	// Grants are refs or path.Match patterns (GrantShape) beyond Home.
	Grants []string
	// Explain tells, after a refusal, where refs resolve and how to grant
	// others; the default speaks of Home only.
	Explain string
}

func (sc Scope) granted(ref string) bool {
	for _, g := range sc.Grants {
		if ok, _ := path.Match(g, ref); ok {
			return true
		}
	}
	return false
}

// Resolve returns ref as HOME/NAME, or an error when the source may not
// use it. A granted ref is taken as it is; a bare NAME lives in Home;
// NAMESPACE/NAME is allowed when NAMESPACE is Home.
func (sc Scope) Resolve(ref string) (string, error) {
	if sc.granted(ref) {
		return ref, nil
	}
	ns, name, qualified := strings.Cut(ref, "/")
	if !qualified {
		return sc.Home + "/" + ref, nil
	}
	if ns == sc.Home && !strings.Contains(name, "/") {
		return ref, nil
	}
	explain := sc.Explain
	if explain == "" {
		explain = fmt.Sprintf("its refs resolve in %q", sc.Home)
	}
	return "", fmt.Errorf("ref %q is outside what source %q may use: %s", ref, sc.Source, explain)
}

// Apply resolves every external secret of a render within the scope,
// rewriting each ref to HOME/NAME (and the node's hash with it), places
// generated endpoints in Home, and returns a diagnostic per reference the
// source may not use.
func (sc Scope) Apply(res *render.Result) []render.Diagnostic {
	var diags []render.Diagnostic
	for id, nc := range res.Nodes {
		if len(nc.ExternalSecrets)+len(nc.ExternalEndpoints) == 0 {
			continue
		}
		for i := range nc.ExternalEndpoints {
			ext := &nc.ExternalEndpoints[i]
			switch ext.Namespace {
			case "":
				ext.Namespace = sc.Home
			case sc.Home:
			default:
				diags = append(diags, render.Diagnostic{
					Pos: ext.Source, Node: id, Type: render.EndpointType, Name: ext.ClusterName, Rule: RuleScope,
					Message: fmt.Sprintf("endpoints of cluster %q: the EndpointSlices of namespace %q are outside what source %q may use: it reads those of %q only", ext.ClusterName, ext.Namespace, sc.Source, sc.Home),
				})
			}
		}
		for i := range nc.ExternalSecrets {
			ext := &nc.ExternalSecrets[i]
			dir, err := sc.Resolve(ext.Ref)
			if err != nil {
				diags = append(diags, render.Diagnostic{
					Pos: ext.Source, Node: id, Name: ext.Name, Rule: RuleScope,
					Message: fmt.Sprintf("secret %q: %v", ext.Name, err),
				})
				continue
			}
			if _, err := RefDir(render.ExternalSecret{Name: ext.Name, Ref: dir, Source: ext.Source}); err != nil {
				diags = append(diags, render.Diagnostic{Pos: ext.Source, Node: id, Name: ext.Name, Rule: RuleScope, Message: err.Error()})
				continue
			}
			ext.Ref = dir
		}
		nc.Hash = render.HashNode(nc)
	}
	slices.SortStableFunc(diags, func(a, b render.Diagnostic) int {
		return cmp.Or(cmp.Compare(a.Pos.File, b.Pos.File), cmp.Compare(a.Pos.Line, b.Pos.Line), cmp.Compare(a.Pos.Column, b.Pos.Column))
	})
	return diags
}
