package render

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/proto"
)

// index maps node → type URL → name → the item defining it.
type index map[string]map[string]map[string]*item

func (x index) get(node, typeURL, name string) *item {
	return x[node][typeURL][name]
}

func (x index) put(node, typeURL, name string, it *item) {
	byType := x[node]
	if byType == nil {
		byType = map[string]map[string]*item{}
		x[node] = byType
	}
	byName := byType[typeURL]
	if byName == nil {
		byName = map[string]*item{}
		byType[typeURL] = byName
	}
	byName[name] = it
}

// names gives every item its name, reports missing names and nodes, and
// builds the per-node index, reporting duplicates.
func (r *renderer) names() {
	slices.SortStableFunc(r.items, func(a, b *item) int {
		pa, pb := a.pos(), b.pos()
		return cmp.Or(cmp.Compare(pa.File, pb.File), cmp.Compare(pa.Line, pb.Line), cmp.Compare(pa.Column, pb.Column))
	})
	r.index = index{}
	r.failed = index{}
	for _, it := range r.items {
		if it.msg == nil && it.ext == nil {
			// Remember what failed to decode so that references to it do
			// not add a second, misleading diagnostic.
			if it.kind != nil {
				for _, n := range it.nodes {
					r.failed.put(n, it.kind.url, it.displayName(), it)
				}
			}
			continue
		}
		if it.ext == nil && it.name == "" {
			it.name = it.kind.name(it.msg)
			if it.name == "" && it.autoName {
				it.name = listenerAutoName(it.msg.(*listenerv3.Listener))
			}
		}
		name := it.displayName()
		if name == "" {
			// Reported by validate unless a PGV rule already says so.
			it.unnamed = true
			continue
		}
		if len(it.nodes) == 0 {
			r.add(it.diag(nil, RuleNode, "no node ID for this resource: put the file under nodes/<nodeID>/, list nodeIDs in a legate.yaml in a parent directory, or pass --node"))
			continue
		}
		for _, n := range it.nodes {
			if first := r.index.get(n, it.kind.url, name); first != nil {
				if it.kind.url == SecretType && sameSecret(first, it) {
					// A control plane keyed by name (go-control-plane's
					// snapshot, Envoy Gateway) sends Envoy one secret.
					d := it.diag(nil, RuleName, fmt.Sprintf("secret %q is listed again with identical content (first at %s): served once", name, first.pos()))
					d.Node, d.Severity = n, SeverityWarning
					r.add(d)
					continue
				}
				d := it.diag(nil, RuleName, fmt.Sprintf("duplicate %s name %q %s: first defined at %s", it.kind.label, name, nodePhrase(n), first.pos()))
				d.Node = n
				r.add(d)
				continue
			}
			r.index.put(n, it.kind.url, name, it)
		}
	}
}

// sameSecret reports whether two secret items have the same content: equal
// messages, or the same external reference.
func sameSecret(a, b *item) bool {
	switch {
	case a.ext != nil && b.ext != nil:
		x, y := *a.ext, *b.ext
		x.Source, y.Source = Position{}, Position{}
		return x == y
	case a.msg != nil && b.msg != nil:
		return proto.Equal(a.msg, b.msg)
	}
	return false
}

// defined reports whether node n has (or failed to decode) the resource.
// The static resources of a proxy bootstrap also see what is served to
// the bootstrap's node over ADS.
func (r *renderer) defined(n, typeURL, name string) bool {
	if r.index.get(n, typeURL, name) != nil || r.failed.get(n, typeURL, name) != nil {
		return true
	}
	for _, m := range r.fallback[n] {
		if r.index.get(m, typeURL, name) != nil || r.failed.get(m, typeURL, name) != nil {
			return true
		}
	}
	return false
}

// references resolves the names collected by validate and checks the
// rules that span resources of a node.
func (r *renderer) references() {
	for _, rf := range r.refs {
		for _, n := range rf.it.nodes {
			if r.defined(n, rf.target, rf.name) {
				continue
			}
			if _, gen := r.generatedEndpoints[n+"\x00"+rf.name]; gen && rf.target == EndpointType {
				continue
			}
			if files := r.unparsedFor(n); len(files) > 0 {
				// The syntax error is the root cause; say once what it
				// hides rather than report a missing resource.
				d := rf.it.diag(nil, RuleReference, fmt.Sprintf("%s %q not checked because %s failed to parse",
					typeLabel(rf.target), rf.name, strings.Join(files, ", ")))
				d.Field = joinPath(rf.path)
				d.Pos = rf.it.locate(d.Field)
				d.Severity = SeverityWarning
				r.add(d)
				break
			}
			what := "defined"
			if rf.target == SecretType {
				what = "defined or declared external"
			}
			msg := fmt.Sprintf("%s %q is not %s %s", typeLabel(rf.target), rf.name, what, nodePhrase(n))
			severity := ""
			switch {
			case rf.soft && r.settings[rf.it.file].MissingClusters == SeverityError:
				msg += " (strict.missingClusters: error in legate.yaml)"
			case rf.soft:
				severity = SeverityWarning
				msg += ": Envoy accepts this and fails the requests (503 for a route) at run time; " +
					"to refuse it, set strict: {missingClusters: error} in legate.yaml"
			case rf.hard != 0:
				msg += " (" + hardReasons[rf.hard] + ")"
			}
			d := rf.it.diag(nil, RuleReference, msg)
			d.Severity = severity
			d.Field = joinPath(rf.path)
			d.Pos = rf.it.locate(d.Field)
			d.Node = n
			r.add(d)
		}
	}
	r.listenerAddresses()
}

// listenerAddresses reports two listeners of a node bound to the same
// address, port and protocol.
func (r *renderer) listenerAddresses() {
	type key struct{ node, addr string }
	seen := map[key]*item{}
	for _, it := range r.items {
		l, ok := it.msg.(*listenerv3.Listener)
		if !ok || l.GetApiListener() != nil || l.GetInternalListener() != nil {
			continue
		}
		if b := l.GetBindToPort(); b != nil && !b.GetValue() {
			continue
		}
		sa := l.GetAddress().GetSocketAddress()
		if sa == nil {
			continue
		}
		addr := sa.GetProtocol().String() + " " + net.JoinHostPort(sa.GetAddress(), strconv.FormatUint(uint64(sa.GetPortValue()), 10))
		for _, n := range it.nodes {
			k := key{n, addr}
			if first, dup := seen[k]; dup && first != it {
				d := it.diag(nil, RuleListener, fmt.Sprintf("address %s is already used by listener %q (%s) %s",
					net.JoinHostPort(sa.GetAddress(), strconv.FormatUint(uint64(sa.GetPortValue()), 10)), first.displayName(), first.pos(), nodePhrase(n)))
				d.Field = "address"
				d.Pos = it.locate("address.socket_address")
				d.Node = n
				r.add(d)
				continue
			}
			seen[k] = it
		}
	}
}
