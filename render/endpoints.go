package render

import (
	"fmt"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// generated is one load assignment a home builds from EndpointSlices, for
// the nodes of the EnvoyConfig that asks for it.
type generated struct {
	nodes []string
	ext   ExternalEndpoints
}

// endpointSlices takes a generateFromEndpointSlices entry: a cluster's
// load assignment made by the home from the EndpointSlices its selector
// picks in the object's namespace.
func (r *renderer) endpointSlices(file string, slices *yaml.Node, nodes []string, namespace string) {
	slices = resolveAlias(slices)
	if slices.Kind != yaml.MappingNode {
		r.addf(nodePos(file, slices), RuleDocument, "generateFromEndpointSlices must be a mapping of selector, clusterName and targetPort")
		return
	}
	r.checkKeys(file, slices, "selector", "clusterName", "targetPort")
	cluster := scalar(mapValue(slices, "clusterName"))
	if cluster == "" {
		r.addf(nodePos(file, slices), RuleDocument, "generateFromEndpointSlices.clusterName is required: the cluster whose endpoints the EndpointSlices give")
		return
	}
	pos := nodePos(file, slices)
	for _, n := range nodes {
		if first, dup := r.generatedEndpoints[n+"\x00"+cluster]; dup {
			r.addf(pos, RuleName, "endpoints of cluster %q are already generated from EndpointSlices at %s: one entry per cluster", cluster, first)
			return
		}
	}
	// Known even when the entry is refused below, so that the cluster's
	// reference to it is not reported as well.
	for _, n := range nodes {
		r.generatedEndpoints[n+"\x00"+cluster] = pos
	}
	selector, ok := r.labelSelector(file, slices)
	if !ok {
		return
	}
	ext := ExternalEndpoints{
		ClusterName: cluster, Namespace: namespace, Selector: selector,
		TargetPort: scalar(mapValue(slices, "targetPort")), Source: pos,
	}
	if !r.opts.EndpointSlices {
		r.warnf(ext.Source, RuleDocument,
			"generateFromEndpointSlices is acted on only by the Kubernetes home, which builds endpoints from EndpointSlices; "+
				"here (legate serve, legate validate) cluster %q gets no endpoints from it: list them in a resource of type endpoint", cluster)
		return
	}
	r.generated = append(r.generated, generated{nodes: nodes, ext: ext})
}

// labelSelector reads generateFromEndpointSlices.selector, a Kubernetes
// LabelSelector (matchLabels, matchExpressions), into its canonical text.
// A missing or empty selector is refused: it would pick every
// EndpointSlice of the namespace.
func (r *renderer) labelSelector(file string, slices *yaml.Node) (string, bool) {
	sel := mapValue(slices, "selector")
	if sel == nil {
		r.addf(nodePos(file, slices), RuleDocument, "generateFromEndpointSlices.selector is required: the labels of the EndpointSlices to use, e.g. matchLabels: {kubernetes.io/service-name: NAME}")
		return "", false
	}
	sel = resolveAlias(sel)
	if sel.Kind != yaml.MappingNode {
		r.addf(nodePos(file, sel), RuleDocument, "generateFromEndpointSlices.selector must be a mapping of matchLabels and matchExpressions")
		return "", false
	}
	r.checkKeys(file, sel, "matchLabels", "matchExpressions")
	var reqs []labels.Requirement
	ok := true
	add := func(n *yaml.Node, key string, op selection.Operator, values []string) {
		req, err := labels.NewRequirement(key, op, values)
		if err != nil {
			r.addf(nodePos(file, n), RuleDocument, "generateFromEndpointSlices.selector: %v", err)
			ok = false
			return
		}
		reqs = append(reqs, *req)
	}
	if ml := mapValue(sel, "matchLabels"); ml != nil {
		if resolveAlias(ml).Kind != yaml.MappingNode {
			r.addf(nodePos(file, ml), RuleDocument, "generateFromEndpointSlices.selector.matchLabels must map label names to values")
			return "", false
		}
		_ = eachPair(resolveAlias(ml), func(k, v *yaml.Node) error {
			add(k, k.Value, selection.Equals, []string{scalar(v)})
			return nil
		})
	}
	if me := mapValue(sel, "matchExpressions"); me != nil {
		me = resolveAlias(me)
		if me.Kind != yaml.SequenceNode {
			r.addf(nodePos(file, me), RuleDocument, "generateFromEndpointSlices.selector.matchExpressions must be a list of {key, operator, values}")
			return "", false
		}
		for _, e := range me.Content {
			r.checkKeys(file, e, "key", "operator", "values")
			op, known := selectorOperators[scalar(mapValue(e, "operator"))]
			if !known {
				r.addf(nodePos(file, orNode(mapValue(e, "operator"), e)), RuleDocument,
					"generateFromEndpointSlices.selector.matchExpressions: operator %q: want In, NotIn, Exists or DoesNotExist", scalar(mapValue(e, "operator")))
				ok = false
				continue
			}
			var values []string
			if vs := mapValue(e, "values"); vs != nil {
				size := int64(0)
				for _, v := range resolveAlias(vs).Content {
					values = append(values, scalar(v))
					size += nodeCost + int64(len(values[len(values)-1]))
				}
				// Aliased expressions repeat their values: the
				// selector is charged as the writer charges a resource.
				r.spend(file, vs, size)
			}
			switch {
			case len(values) == 0 && (op == selection.In || op == selection.NotIn):
				r.addf(nodePos(file, e), RuleDocument, "generateFromEndpointSlices.selector.matchExpressions: operator %s needs values", scalar(mapValue(e, "operator")))
				ok = false
			case len(values) > 0 && (op == selection.Exists || op == selection.DoesNotExist):
				r.addf(nodePos(file, mapValue(e, "values")), RuleDocument, "generateFromEndpointSlices.selector.matchExpressions: operator %s takes no values", scalar(mapValue(e, "operator")))
				ok = false
			default:
				add(e, scalar(mapValue(e, "key")), op, values)
			}
		}
	}
	if !ok {
		return "", false
	}
	if len(reqs) == 0 {
		r.addf(nodePos(file, sel), RuleDocument, "generateFromEndpointSlices.selector selects every EndpointSlice of the namespace: name the Service's, e.g. matchLabels: {kubernetes.io/service-name: NAME}")
		return "", false
	}
	return labels.NewSelector().Add(reqs...).String(), true
}

var selectorOperators = map[string]selection.Operator{
	"In": selection.In, "NotIn": selection.NotIn, "Exists": selection.Exists, "DoesNotExist": selection.DoesNotExist,
}

// checkGenerated refuses a load assignment both listed as a resource and
// generated from EndpointSlices: the proxy would get one of the two.
func (r *renderer) checkGenerated() {
	keys := make([]string, 0, len(r.generatedEndpoints))
	for k := range r.generatedEndpoints {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		node, cluster, _ := strings.Cut(k, "\x00")
		if it := r.index.get(node, EndpointType, cluster); it != nil {
			r.add(Diagnostic{
				Pos: r.generatedEndpoints[k], Node: node, Type: EndpointType, Name: cluster, Rule: RuleName,
				Message: fmt.Sprintf("generated from EndpointSlices and also listed at %s: keep one", it.pos()),
			})
		}
	}
}

// generatedFor returns the load assignments generated for node, by
// cluster name.
func (r *renderer) generatedFor(node string) []ExternalEndpoints {
	var out []ExternalEndpoints
	for _, g := range r.generated {
		for _, n := range g.nodes {
			if n == node {
				out = append(out, g.ext)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ClusterName < out[j].ClusterName })
	return out
}
