package render

import (
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/proto"
)

// item is one resource found in the input, before and after decoding.
type item struct {
	kind  *kind
	file  string
	root  *yaml.Node // the resource's mapping node
	skip  []string   // keys of root that are not resource fields ("@type")
	nodes []string

	// name overrides the decoded name (bootstrap listeners without one).
	name string
	// autoName asks for a name made from the listener address (bootstrap
	// listeners may omit the name; xDS listeners may not).
	autoName bool
	// unnamed marks a decoded resource without a name.
	unnamed bool
	// ext is set for a secret that refers to key material held elsewhere;
	// such an item has no message.
	ext *ExternalSecret

	msg proto.Message
	// problems are the decode and PGV diagnostics of the item, for
	// FailedChecks.
	problems []Diagnostic
}

func nodePos(file string, n *yaml.Node) Position {
	if n == nil {
		return Position{File: file}
	}
	return Position{File: file, Line: n.Line, Column: n.Column}
}

func (it *item) pos() Position { return nodePos(it.file, it.root) }

func (it *item) locate(field string) Position {
	if field == "" {
		return it.pos()
	}
	return nodePos(it.file, findNode(it.root, splitPath(field)))
}

// classify turns one parsed document into items, reporting what it cannot
// use. fileNodes are the node IDs given by the file's place in the tree.
func (r *renderer) classify(file string, doc *yaml.Node, fileNodes []string) {
	if doc.Kind != yaml.MappingNode {
		r.addf(nodePos(file, doc), RuleDocument, "expected a mapping at the top of the document, found %s", kindName(doc))
		return
	}
	apiVersion, kindV := scalar(mapValue(doc, "apiVersion")), scalar(mapValue(doc, "kind"))
	switch {
	case apiVersion != "" && kindV != "":
		switch {
		case kindV == "EnvoyConfig" && (apiVersion == "legate.dev/v1alpha1" || apiVersion == "marin3r.3scale.net/v1alpha1"):
			r.envoyConfig(file, doc)
		case r.unknownLegateObject(file, doc, apiVersion, kindV):
		default:
			// Another Kubernetes object (a Deployment, a kustomization…)
			// sitting next to the configuration: not ours.
			r.skipped++
		}
	case mapValue(doc, "@type") != nil:
		url := scalar(mapValue(doc, "@type"))
		switch url {
		case discoveryResponseType:
			r.discoveryResponse(file, doc, fileNodes)
		case bootstrapType:
			r.bootstrap(file, doc, fileNodes)
		default:
			r.typedResource(file, doc, fileNodes)
		}
	case mapValue(doc, "resources") != nil:
		r.discoveryResponse(file, doc, fileNodes)
	case isBootstrap(doc):
		r.bootstrap(file, doc, fileNodes)
	default:
		r.addf(nodePos(file, doc), RuleDocument,
			`not an Envoy configuration document: expected "@type", "resources" (filesystem xDS), "static_resources" (bootstrap) or an EnvoyConfig with apiVersion and kind`)
	}
}

func scalar(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	n = resolveAlias(n)
	if n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// typedResource takes a document or list entry carrying "@type".
func (r *renderer) typedResource(file string, n *yaml.Node, nodes []string) {
	t := mapValue(n, "@type")
	url := scalar(t)
	k, ok := kindByURL[url]
	if !ok && isV2(url) {
		r.addf(nodePos(file, t), RuleDocument, "@type %s", v2Message(url))
		return
	}
	if !ok {
		r.addf(nodePos(file, t), RuleDocument, "@type %q is not an xDS resource type: want one of %s", url, strings.Join(TypeURLs(), ", "))
		return
	}
	r.addItem(&item{kind: k, file: file, root: n, skip: []string{"@type"}, nodes: nodes})
}

// discoveryResponse takes Envoy's filesystem-xDS form:
// {version_info, resources: [{"@type": …}, …]}.
func (r *renderer) discoveryResponse(file string, doc *yaml.Node, nodes []string) {
	res := resolveAlias(mapValue(doc, "resources"))
	if kustomization(res) {
		r.skipped++
		return
	}
	r.checkKeys(file, doc, "@type", "version_info", "versionInfo", "resources", "type_url", "typeUrl", "nonce", "canary", "control_plane", "controlPlane")
	if res.Kind != yaml.SequenceNode {
		r.addf(nodePos(file, res), RuleDocument, "resources must be a list of resources with \"@type\"")
		return
	}
	for _, e := range res.Content {
		e = resolveAlias(e)
		if e.Kind != yaml.MappingNode || mapValue(e, "@type") == nil {
			r.addf(nodePos(file, e), RuleDocument, "each entry of resources needs \"@type\"")
			continue
		}
		r.typedResource(file, e, nodes)
	}
}

// kustomization reports whether a resources list names files, as a
// kustomization.yaml's does.
func kustomization(res *yaml.Node) bool {
	if res.Kind != yaml.SequenceNode || len(res.Content) == 0 {
		return false
	}
	for _, e := range res.Content {
		if resolveAlias(e).Kind != yaml.ScalarNode {
			return false
		}
	}
	return true
}

// checkKeys reports keys of a mapping that are not in allowed.
func (r *renderer) checkKeys(file string, n *yaml.Node, allowed ...string) {
	_ = eachPair(resolveAlias(n), func(k, _ *yaml.Node) error {
		for _, a := range allowed {
			if k.Value == a {
				return nil
			}
		}
		if s := Suggest(k.Value, allowed); s != "" {
			r.addf(nodePos(file, k), RuleDecode, "unknown field %s, did you mean %s", k.Value, s)
			return nil
		}
		r.addf(nodePos(file, k), RuleDecode, "unknown field %q: want one of %s", k.Value, strings.Join(allowed, ", "))
		return nil
	})
}
