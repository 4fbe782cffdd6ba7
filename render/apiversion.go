package render

import (
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// The fields of an EnvoyConfig document and of its spec, as the CRD
// (legate.dev/v1alpha1) and MARIN3R define them.
var (
	envoyConfigTopFields  = []string{"apiVersion", "kind", "metadata", "spec", "status"}
	envoyConfigSpecFields = []string{"nodeID", "serialization", "envoyAPI", "envoyResources", "resources"}
)

// legateKinds are the kinds of the legate.dev group, and the apiVersion
// each is served at.
var legateKinds = map[string]string{
	"EnvoyConfig":         "legate.dev/v1alpha1",
	"EnvoySource":         "legate.dev/v1alpha1",
	"EnvoyConfigRevision": "legate.dev/v1alpha1",
}

// unknownLegateObject reports (and returns true for) a document that is
// meant as one of legate's objects but that the API server would refuse:
// a legate kind at an apiVersion that does not serve it (legate.dev/v1,
// legate.io/v1alpha1), a mistyped kind in the legate.dev group, or a
// MARIN3R EnvoyConfig at another version. Skipping such a document as "not
// ours" would let `legate validate` pass what `kubectl apply` refuses.
func (r *renderer) unknownLegateObject(file string, doc *yaml.Node, apiVersion, kindV string) bool {
	group, _, _ := strings.Cut(apiVersion, "/")
	kinds := make([]string, 0, len(legateKinds))
	for k := range legateKinds {
		kinds = append(kinds, k)
	}
	kindNode, apiNode := mapValue(doc, "kind"), mapValue(doc, "apiVersion")
	switch want, known := legateKinds[kindV]; {
	case known && apiVersion == want:
		// An EnvoySource or a revision beside the configuration.
		return false
	case known && group == "marin3r.3scale.net" && kindV == "EnvoyConfig":
		r.addf(nodePos(file, apiNode), RuleDocument, "%s: apiVersion %q is not served: want marin3r.3scale.net/v1alpha1 (or %s)", r.docName(doc, kindV), apiVersion, want)
	case known && group == "marin3r.3scale.net":
		// MARIN3R's own EnvoyConfigRevision and others: not ours.
		return false
	case known:
		r.addf(nodePos(file, apiNode), RuleDocument, "%s: apiVersion %q is not served: want %s", r.docName(doc, kindV), apiVersion, want)
	case group == "legate.dev":
		if s := Suggest(kindV, kinds); s != "" {
			r.addf(nodePos(file, kindNode), RuleDocument, "%s: unknown kind %s in %s, did you mean %s", r.docName(doc, kindV), kindV, apiVersion, s)
		} else {
			r.addf(nodePos(file, kindNode), RuleDocument, "%s: unknown kind %q in %s: want one of EnvoyConfig, EnvoySource, EnvoyConfigRevision", r.docName(doc, kindV), kindV, apiVersion)
		}
	default:
		return false
	}
	return true
}

// docName names the document being classified in a message: its kind,
// its metadata name when it has one, and its place in the file.
func (r *renderer) docName(doc *yaml.Node, kindV string) string {
	name := kindV
	if n := scalar(mapValue(mapValue(doc, "metadata"), "name")); n != "" {
		name += " " + strconv.Quote(n)
	}
	return name + " (document " + strconv.Itoa(r.docIndex+1) + " of the file)"
}

// misspelled reports whether spec holds a key that Suggest turns into
// field: the unknown-field diagnostic already says what to fix.
func (r *renderer) misspelled(spec *yaml.Node, field string, fields []string) bool {
	found := false
	_ = eachPair(resolveAlias(spec), func(k, _ *yaml.Node) error {
		if k.Value != field && Suggest(k.Value, fields) == field {
			found = true
		}
		return nil
	})
	return found
}
