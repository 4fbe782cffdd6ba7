package render

import (
	"net"
	"strconv"
	"strings"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	yaml "go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/reflect/protoreflect"
)

var bootstrapFields = (&bootstrapv3.Bootstrap{}).ProtoReflect().Descriptor().Fields()

// isBootstrap reports whether doc has static_resources; its other keys
// are checked when it is decoded.
func isBootstrap(doc *yaml.Node) bool {
	found := false
	_ = eachPair(doc, func(k, _ *yaml.Node) error {
		if fd := bootstrapField(k.Value); fd != nil && fd.Name() == "static_resources" {
			found = true
		}
		return nil
	})
	return found
}

func bootstrapField(name string) protoreflect.FieldDescriptor {
	if fd := bootstrapFields.ByName(protoreflect.Name(name)); fd != nil {
		return fd
	}
	return bootstrapFields.ByJSONName(name)
}

// bootstrap takes an Envoy bootstrap: the whole document is decoded
// strictly (so a typo in admin is caught too) and its static_resources
// become dynamic resources. A node.id in the bootstrap names the node.
func (r *renderer) bootstrap(file string, doc *yaml.Node, nodes []string) {
	var static *yaml.Node
	var staticKey string
	_ = eachPair(doc, func(k, v *yaml.Node) error {
		if fd := bootstrapField(k.Value); fd != nil && fd.Name() == "static_resources" {
			static, staticKey = v, k.Value
		}
		return nil
	})
	b := &bootstrapv3.Bootstrap{}
	probe := &item{file: file, root: doc, skip: []string{"@type", staticKey}}
	if d := decodeWith(&r.jw, probe, b); d != nil {
		r.bootstrapErrors(file, doc, staticKey)
		return
	}
	if id := b.GetNode().GetId(); id != "" {
		nodes = []string{id}
	}
	if static == nil {
		return
	}
	if dr := b.GetDynamicResources(); dr != nil && (dr.GetAdsConfig() != nil || dr.GetLdsConfig() != nil || dr.GetCdsConfig() != nil) {
		// The bootstrap of a proxy that takes its configuration from a
		// control plane: its static resources (the control plane's own
		// cluster) stay in the proxy. They are checked as Envoy loads
		// them, with this bootstrap alone, and not served, so that several
		// such bootstraps for one node do not collide.
		scope := proxyBootstrapScope(file, doc)
		r.fallback[scope] = nodes
		nodes = []string{scope}
	}
	static = resolveAlias(static)
	r.checkKeys(file, static, "listeners", "clusters", "secrets")
	for _, l := range []struct {
		key, url string
	}{{"listeners", ListenerType}, {"clusters", ClusterType}, {"secrets", SecretType}} {
		list := mapValue(static, l.key)
		if list == nil {
			continue
		}
		list = resolveAlias(list)
		if list.Kind != yaml.SequenceNode {
			r.addf(nodePos(file, list), RuleDecode, "static_resources.%s must be a list", l.key)
			continue
		}
		for _, e := range list.Content {
			r.addItem(&item{
				kind: kindByURL[l.url], file: file, root: resolveAlias(e), nodes: nodes,
				autoName: l.url == ListenerType,
			})
		}
	}
}

// listenerAutoName names a bootstrap listener that has no name after its
// address and port, "0.0.0.0:10000", as xDS needs a name.
func listenerAutoName(l *listenerv3.Listener) string {
	sa := l.GetAddress().GetSocketAddress()
	if sa == nil {
		if p := l.GetAddress().GetPipe().GetPath(); p != "" {
			return p
		}
		return "listener"
	}
	return net.JoinHostPort(sa.GetAddress(), strconv.FormatUint(uint64(sa.GetPortValue()), 10))
}

// bootstrapErrors decodes each top-level field of a bootstrap that failed
// to decode on its own, so that every wrong field is reported, not only
// the first.
func (r *renderer) bootstrapErrors(file string, doc *yaml.Node, staticKey string) {
	_ = eachPair(doc, func(k, v *yaml.Node) error {
		if k.Value == "@type" || k.Value == staticKey {
			return nil
		}
		one := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: doc.Line, Column: doc.Column, Content: []*yaml.Node{k, v}}
		if d := decodeWith(&r.jw, &item{file: file, root: one}, &bootstrapv3.Bootstrap{}); d != nil {
			r.add(*d)
		}
		return nil
	})
}

// proxyScopePrefix starts the private node key of a proxy bootstrap's
// static resources; no node ID contains a NUL byte.
const proxyScopePrefix = "\x00bootstrap "

func proxyBootstrapScope(file string, doc *yaml.Node) string {
	return proxyScopePrefix + nodePos(file, doc).String()
}

// nodePhrase names a node, or the bootstrap whose private scope n is, in
// messages.
func nodePhrase(n string) string {
	if p, ok := strings.CutPrefix(n, proxyScopePrefix); ok {
		return "in the bootstrap at " + p
	}
	return "for node " + strconv.Quote(n)
}
