package standalone

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/sds"
)

// RuleSecretScope names the diagnostic of a secret reference outside what
// its source may use.
const RuleSecretScope = "secret-scope"

// grantShape checks one entry of a source's secrets grants: a ref or a
// path.Match pattern of one or two plain segments.
func grantShape(g string) error {
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

// secretScope is what one source's configurations may read below the
// secrets directory: its own directory, named after the source, and the
// refs its grants name.
type secretScope struct {
	source string
	grants []string
}

func (sc secretScope) granted(ref string) bool {
	for _, g := range sc.grants {
		if ok, _ := path.Match(g, ref); ok {
			return true
		}
	}
	return false
}

// resolve returns the directory of ref relative to the secrets directory,
// or an error when the source may not use it. A granted ref is taken as it
// is; a bare NAME lives in the source's own directory; NAMESPACE/NAME is
// allowed when NAMESPACE is the source.
func (sc secretScope) resolve(ref string) (string, error) {
	if sc.granted(ref) {
		return ref, nil
	}
	ns, name, qualified := strings.Cut(ref, "/")
	if !qualified {
		return sc.source + "/" + ref, nil
	}
	if ns == sc.source && !strings.Contains(name, "/") {
		return ref, nil
	}
	return "", fmt.Errorf("ref %q is outside what source %q may use: its refs resolve in the directory %q of secretsDir, and others must be granted in the source's secrets list",
		ref, sc.source, sc.source+"/")
}

// apply resolves every external secret of a render within the scope,
// rewriting each ref to its directory below the secrets directory (and the
// node's hash with it), and returns a diagnostic per reference the source
// may not use.
func (sc secretScope) apply(res *render.Result) []render.Diagnostic {
	var diags []render.Diagnostic
	for id, nc := range res.Nodes {
		if len(nc.ExternalSecrets) == 0 {
			continue
		}
		for i := range nc.ExternalSecrets {
			ext := &nc.ExternalSecrets[i]
			dir, err := sc.resolve(ext.Ref)
			if err != nil {
				diags = append(diags, render.Diagnostic{
					Pos: ext.Source, Node: id, Name: ext.Name, Rule: RuleSecretScope,
					Message: fmt.Sprintf("secret %q: %v", ext.Name, err),
				})
				continue
			}
			if _, err := sds.RefDir(render.ExternalSecret{Name: ext.Name, Ref: dir, Source: ext.Source}); err != nil {
				diags = append(diags, render.Diagnostic{Pos: ext.Source, Node: id, Name: ext.Name, Rule: RuleSecretScope, Message: err.Error()})
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
