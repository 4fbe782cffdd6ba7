package render

import (
	"bytes"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/legate-dev/legate/render/jsonparse"
)

// envoyConfig takes an EnvoyConfig document, legate.dev/v1alpha1 or
// marin3r.3scale.net/v1alpha1: the same spec, exactly as MARIN3R accepts
// it (spec.resources or the older spec.envoyResources with serialized
// string values), so that a MARIN3R manifest with its apiVersion changed
// renders the same.
func (r *renderer) envoyConfig(file string, doc *yaml.Node) {
	spec := mapValue(doc, "spec")
	if spec == nil || resolveAlias(spec).Kind != yaml.MappingNode {
		r.addf(nodePos(file, doc), RuleDocument, "EnvoyConfig needs a spec mapping")
		return
	}
	namespace := scalar(mapValue(mapValue(doc, "metadata"), "namespace"))
	r.checkKeys(file, doc, envoyConfigTopFields...)
	r.checkKeys(file, spec, envoyConfigSpecFields...)
	nodeID := scalar(mapValue(spec, "nodeID"))
	if nodeID == "" {
		if !r.misspelled(spec, "nodeID", envoyConfigSpecFields) {
			r.addf(nodePos(file, spec), RuleNode, "EnvoyConfig spec.nodeID is required: the node ID of the proxies this configuration is for")
		}
		return
	}
	name := scalar(mapValue(mapValue(doc, "metadata"), "name"))
	if first, ok := r.envoyConfigs[nodeID]; ok {
		r.addf(nodePos(file, mapValue(spec, "nodeID")), RuleNode,
			"node %q is already configured by EnvoyConfig %q at %s: use one EnvoyConfig per node ID", nodeID, first.name, first.pos)
		return
	}
	r.envoyConfigs[nodeID] = envoyConfigRef{name: name, pos: nodePos(file, doc)}
	nodes := []string{nodeID}
	if api := scalar(mapValue(spec, "envoyAPI")); api != "" && api != "v3" {
		r.addf(nodePos(file, mapValue(spec, "envoyAPI")), RuleDocument, "envoyAPI %q: Envoy's v2 API was removed (Envoy 1.18 reads only v3): set envoyAPI: v3 and write v3 resources", api)
	}
	res, old := mapValue(spec, "resources"), mapValue(spec, "envoyResources")
	switch {
	case res != nil && old != nil:
		r.addf(nodePos(file, spec), RuleDocument, "set one of spec.resources and spec.envoyResources, not both")
	case res != nil:
		r.resourceList(file, res, nodes, namespace)
	case old != nil:
		ser := scalar(mapValue(spec, "serialization"))
		if ser == "" {
			ser = "json"
		}
		if ser != "json" && ser != "yaml" {
			r.addf(nodePos(file, mapValue(spec, "serialization")), RuleDocument, "serialization %q: want json or yaml", ser)
			return
		}
		r.envoyResources(file, old, nodes, namespace, ser)
	case r.misspelled(spec, "resources", envoyConfigSpecFields):
		// The unknown-field diagnostic names the fix.
	default:
		r.addf(nodePos(file, spec), RuleDocument, "EnvoyConfig needs spec.resources")
	}
}

// envoyConfigRef remembers the EnvoyConfig that configures a node.
type envoyConfigRef struct {
	name string
	pos  Position
}

// resourceList takes spec.resources: entries of {type, value} or secret
// references, and (legate.dev only, but accepted everywhere) entries that
// carry "@type" themselves.
func (r *renderer) resourceList(file string, list *yaml.Node, nodes []string, namespace string) {
	list = resolveAlias(list)
	if list.Kind != yaml.SequenceNode {
		r.addf(nodePos(file, list), RuleDocument, "spec.resources must be a list")
		return
	}
	for _, e := range list.Content {
		e = resolveAlias(e)
		if e.Kind != yaml.MappingNode {
			r.addf(nodePos(file, e), RuleDocument, "each entry of spec.resources must be a mapping")
			continue
		}
		if mapValue(e, "@type") != nil {
			r.typedResource(file, e, nodes)
			continue
		}
		r.checkKeys(file, e, "type", "value", "generateFromTlsSecret", "generateFromOpaqueSecret", "generateFromEndpointSlices", "blueprint")
		typeNode := mapValue(e, "type")
		url, ok := marin3rTypes[scalar(typeNode)]
		if !ok {
			r.addf(nodePos(file, orNode(typeNode, e)), RuleDocument, "resource type %q: want one of listener, route, scopedRoute, virtualHost, cluster, endpoint, secret, runtime, extensionConfig", scalar(typeNode))
			continue
		}
		value := mapValue(e, "value")
		tls, opaque := mapValue(e, "generateFromTlsSecret"), mapValue(e, "generateFromOpaqueSecret")
		slices := mapValue(e, "generateFromEndpointSlices")
		switch {
		case url == SecretType:
			if value != nil {
				r.addf(nodePos(file, value), RuleDocument, "a secret's key material does not belong in the configuration: use generateFromTlsSecret or generateFromOpaqueSecret instead of value")
				continue
			}
			r.secretRef(file, e, tls, opaque, nodes, namespace)
		case tls != nil || opaque != nil:
			r.addf(nodePos(file, orNode(tls, opaque)), RuleDocument, "generateFromTlsSecret and generateFromOpaqueSecret are only for type secret")
		case slices != nil:
			if url != EndpointType {
				r.addf(nodePos(file, slices), RuleDocument, "generateFromEndpointSlices is only for type endpoint")
				continue
			}
			r.endpointSlices(file, slices, nodes, namespace)
		case value == nil:
			r.addf(nodePos(file, e), RuleDocument, "resource of type %s needs a value", scalar(typeNode))
		default:
			k := kindByURL[url]
			r.addItem(&item{kind: k, file: file, root: resolveAlias(value), nodes: nodes})
		}
	}
}

func orNode(a, b *yaml.Node) *yaml.Node {
	if a != nil {
		return a
	}
	return b
}

// secretRef records a secret whose key material a Kubernetes Secret holds.
func (r *renderer) secretRef(file string, e, tls, opaque *yaml.Node, nodes []string, namespace string) {
	qualify := func(name string) string {
		if namespace == "" {
			return name
		}
		return namespace + "/" + name
	}
	var ext ExternalSecret
	switch {
	case tls != nil && opaque != nil:
		r.addf(nodePos(file, e), RuleDocument, "set one of generateFromTlsSecret and generateFromOpaqueSecret, not both")
		return
	case tls != nil:
		name := scalar(tls)
		if name == "" {
			r.addf(nodePos(file, tls), RuleDocument, "generateFromTlsSecret needs the name of a kubernetes.io/tls Secret")
			return
		}
		ext = ExternalSecret{Name: name, Ref: qualify(name), Kind: "tls", Source: nodePos(file, e)}
		switch bp := scalar(mapValue(e, "blueprint")); bp {
		case "", "tlsCertificate":
		case "validationContext":
			ext.Kind = "validation"
		default:
			r.addf(nodePos(file, mapValue(e, "blueprint")), RuleDocument, "blueprint %q: want tlsCertificate or validationContext", bp)
			return
		}
	case opaque != nil:
		name, key, alias := scalar(mapValue(opaque, "name")), scalar(mapValue(opaque, "key")), scalar(mapValue(opaque, "alias"))
		if name == "" || key == "" || alias == "" {
			r.addf(nodePos(file, opaque), RuleDocument, "generateFromOpaqueSecret needs name, key and alias")
			return
		}
		if mapValue(e, "blueprint") != nil {
			r.addf(nodePos(file, mapValue(e, "blueprint")), RuleDocument, "blueprint applies only to generateFromTlsSecret")
			return
		}
		ext = ExternalSecret{Name: alias, Ref: qualify(name), Key: key, Kind: "opaque", Source: nodePos(file, e)}
	default:
		r.addf(nodePos(file, e), RuleDocument, "a secret needs generateFromTlsSecret or generateFromOpaqueSecret")
		return
	}
	r.addItem(&item{kind: kindByURL[SecretType], file: file, root: e, nodes: nodes, ext: &ext})
}

// envoyResources takes MARIN3R's older spec.envoyResources form, whose
// values are strings holding JSON or YAML.
func (r *renderer) envoyResources(file string, old *yaml.Node, nodes []string, namespace, ser string) {
	allowed := []string{"secrets"}
	for _, l := range marin3rLists {
		allowed = append(allowed, l.key)
	}
	r.checkKeys(file, old, allowed...)
	for _, l := range marin3rLists {
		list := mapValue(old, l.key)
		if list == nil {
			continue
		}
		list = resolveAlias(list)
		if list.Kind != yaml.SequenceNode {
			r.addf(nodePos(file, list), RuleDocument, "envoyResources.%s must be a list", l.key)
			continue
		}
		for _, e := range list.Content {
			r.checkKeys(file, e, "name", "value")
			v := mapValue(e, "value")
			if v == nil || resolveAlias(v).Kind != yaml.ScalarNode {
				r.addf(nodePos(file, e), RuleDocument, "each entry of envoyResources.%s needs a string value holding the resource in %s", l.key, ser)
				continue
			}
			root, err := r.embedded(file, resolveAlias(v), ser)
			if err != nil {
				r.addf(nodePos(file, v), RuleSyntax, "value is not valid %s: %v", strings.ToUpper(ser), err)
				continue
			}
			r.addItem(&item{kind: kindByURL[l.url], file: file, root: root, nodes: nodes})
		}
	}
	if secrets := mapValue(old, "secrets"); secrets != nil {
		for _, e := range resolveAlias(secrets).Content {
			r.checkKeys(file, e, "name", "ref")
			name := scalar(mapValue(e, "name"))
			if name == "" {
				r.addf(nodePos(file, e), RuleDocument, "each entry of envoyResources.secrets needs a name")
				continue
			}
			ref := mapValue(e, "ref")
			secret, ns := name, namespace
			if ref != nil {
				if n := scalar(mapValue(ref, "name")); n != "" {
					secret = n
				}
				if n := scalar(mapValue(ref, "namespace")); n != "" {
					ns = n
				}
			}
			if ns != "" {
				secret = ns + "/" + secret
			}
			ext := ExternalSecret{Name: name, Ref: secret, Kind: "tls", Source: nodePos(file, e)}
			r.addItem(&item{kind: kindByURL[SecretType], file: file, root: resolveAlias(e), nodes: nodes, ext: &ext})
		}
	}
}

// embedded parses a string value holding a resource and moves the
// positions of its nodes to where the text sits in the file. A value
// reached again through an alias is parsed once: its entries share the
// tree, and the writer charges each for what it expands to.
func (r *renderer) embedded(file string, v *yaml.Node, ser string) (*yaml.Node, error) {
	if e, ok := r.embeds[v]; ok {
		return e.root, e.err
	}
	root, err := r.parseEmbedded(v, ser)
	if r.embeds == nil {
		r.embeds = map[*yaml.Node]parsedValue{}
	}
	r.embeds[v] = parsedValue{root: root, err: err}
	return root, err
}

// parsedValue is the tree of a string value, or why it does not parse.
type parsedValue struct {
	root *yaml.Node
	err  error
}

func (r *renderer) parseEmbedded(v *yaml.Node, ser string) (*yaml.Node, error) {
	var root *yaml.Node
	if ser == "json" {
		n, err := jsonparse.Parse([]byte(v.Value))
		if err != nil {
			return nil, err
		}
		root = n
	} else {
		docs, err := parseDocuments([]byte(v.Value))
		if err != nil {
			return nil, err
		}
		if len(docs) != 1 {
			return nil, errf("want exactly one document, found %d", len(docs))
		}
		root = docs[0]
	}
	r.jw.budget.allowInput(len(v.Value), root)
	block := v.Style == yaml.LiteralStyle || v.Style == yaml.FoldedStyle
	indent := 0
	if block {
		indent = lineIndent(r.src, v.Line+1)
	}
	quoted := 0
	if v.Style == yaml.DoubleQuotedStyle || v.Style == yaml.SingleQuotedStyle {
		quoted = 1
	}
	shiftPositions(root, func(line, col int) (int, int) {
		if block {
			return v.Line + line, indent + col
		}
		if line == 1 {
			return v.Line, v.Column + quoted + col - 1
		}
		return v.Line + line - 1, col
	}, map[*yaml.Node]bool{})
	return root, nil
}

func shiftPositions(n *yaml.Node, f func(line, col int) (int, int), seen map[*yaml.Node]bool) {
	if seen[n] {
		return
	}
	seen[n] = true
	n.Line, n.Column = f(n.Line, n.Column)
	for _, c := range n.Content {
		shiftPositions(c, f, seen)
	}
}

// lineIndent counts the spaces that start 1-based line n of src.
func lineIndent(src []byte, n int) int {
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(src, '\n')
		if j < 0 {
			return 0
		}
		src = src[j+1:]
	}
	k := 0
	for k < len(src) && src[k] == ' ' {
		k++
	}
	return k
}
