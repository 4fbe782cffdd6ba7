package render

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"slices"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"
)

var deterministic = proto.MarshalOptions{Deterministic: true}

// Marshal serializes a resource message canonically: deterministic
// protobuf wire bytes, so equal content gives equal bytes.
func Marshal(m proto.Message) ([]byte, error) {
	return deterministic.Marshal(m)
}

// output builds the node configurations from the index.
func (r *renderer) output() map[string]*NodeConfig {
	bodies := make([][]byte, len(r.items))
	errs := make([]error, len(r.items))
	parallel(len(r.items), func(i int) {
		if r.expired() {
			return
		}
		if m := r.items[i].msg; m != nil {
			bodies[i], errs[i] = Marshal(m)
		}
	})
	body := make(map[*item][]byte, len(r.items))
	for i, it := range r.items {
		if errs[i] != nil {
			r.add(it.diag(nil, RuleDecode, "cannot serialize: "+errs[i].Error()))
		}
		body[it] = bodies[i]
	}
	out := make(map[string]*NodeConfig, len(r.index))
	for node, byType := range r.index {
		if strings.HasPrefix(node, proxyScopePrefix) {
			continue // checked, never served
		}
		nc := &NodeConfig{NodeID: node, Types: map[string]TypeSet{}}
		for url, byName := range byType {
			var rs []Resource
			for name, it := range byName {
				if it.ext != nil {
					ext := *it.ext
					nc.ExternalSecrets = append(nc.ExternalSecrets, ext)
					continue
				}
				rs = append(rs, Resource{Name: name, Body: body[it], Source: it.pos()})
			}
			if len(rs) == 0 {
				continue
			}
			sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
			nc.Types[url] = TypeSet{Hash: HashResources(rs), Resources: rs}
		}
		slices.SortFunc(nc.ExternalSecrets, func(a, b ExternalSecret) int { return cmp.Compare(a.Name, b.Name) })
		nc.ExternalEndpoints = r.generatedFor(node)
		nc.Hash = HashNode(nc)
		out[node] = nc
	}
	return out
}

func writeField(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}

// HashResources is the content hash of a type's resources: hex SHA-256
// over each name and body, length-prefixed, in the given order (sorted by
// name in a TypeSet). Source positions do not count.
func HashResources(rs []Resource) string {
	h := sha256.New()
	for _, r := range rs {
		writeField(h, []byte(r.Name))
		writeField(h, r.Body)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// HashNode is the content hash of a node configuration: hex SHA-256 over
// its type URLs in order with each set's hash, its external secrets
// (name, ref, key, kind) and generated endpoints (cluster, namespace,
// selector, port). The node ID and source positions do not count,
// so equal content gives an equal hash whatever the file layout.
func HashNode(nc *NodeConfig) string {
	urls := make([]string, 0, len(nc.Types))
	for u := range nc.Types {
		urls = append(urls, u)
	}
	sort.Strings(urls)
	h := sha256.New()
	for _, u := range urls {
		writeField(h, []byte(u))
		writeField(h, []byte(nc.Types[u].Hash))
	}
	for _, s := range nc.ExternalSecrets {
		writeField(h, []byte("secret"))
		writeField(h, []byte(s.Name))
		writeField(h, []byte(s.Ref))
		writeField(h, []byte(s.Key))
		writeField(h, []byte(s.Kind))
	}
	for _, e := range nc.ExternalEndpoints {
		writeField(h, []byte("endpoints"))
		writeField(h, []byte(e.ClusterName))
		writeField(h, []byte(e.Namespace))
		writeField(h, []byte(e.Selector))
		writeField(h, []byte(e.TargetPort))
	}
	return hex.EncodeToString(h.Sum(nil))
}
