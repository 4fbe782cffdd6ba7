package readapi

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/legate-dev/legate/preview"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/sources"
)

// secretType is the SDS type; its resources are never shown.
const secretType = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"

// RevisionView is GET /api/v1/nodes/{node}/revisions/{hash}: one revision
// of a node with its resources as Envoy's JSON.
type RevisionView struct {
	Node      string            `json:"node"`
	Hash      string            `json:"hash"`
	Served    bool              `json:"served"`
	Origin    sources.Origin    `json:"origin"`
	CreatedAt time.Time         `json:"createdAt"`
	Taint     *revisions.Taint  `json:"taint,omitempty"`
	Resources []ResourceView    `json:"resources"`
	Secrets   []ExternalSecretV `json:"externalSecrets,omitempty"`
}

// ResourceView is one resource of a revision. The key material of SDS
// secrets is never shown: a secret has Redacted set and no Value.
type ResourceView struct {
	Type     string          `json:"type"`
	Name     string          `json:"name"`
	Source   string          `json:"source,omitempty"`
	Value    json.RawMessage `json:"value,omitempty"`
	Redacted bool            `json:"redacted,omitempty"`
}

// ExternalSecretV names a secret the revision refers to (never its key
// material).
type ExternalSecretV struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
}

// RevisionOf is the view of node's revision hash ("served" names the one
// served; a unique prefix of a hash is enough, as legate status shows them).
func RevisionOf(e Engine, node, hash string) (RevisionView, error) {
	if hash == "served" {
		st, ok := e.Node(node)
		if !ok {
			return RevisionView{}, errors.New("no node " + quote(node))
		}
		if st.Published == nil {
			return RevisionView{}, errors.New("node " + quote(node) + " serves nothing")
		}
		hash = st.Published.Hash
	}
	rev, served, ok := e.Revision(node, ResolveRevision(e, node, hash))
	if !ok {
		if _, known := e.Node(node); !known {
			return RevisionView{}, errors.New("no node " + quote(node))
		}
		return RevisionView{}, errors.New("no revision " + quote(hash) + " of node " + quote(node) + " (a hash or a unique prefix of one, as legate status shows)")
	}
	v := RevisionView{
		Node: node, Hash: rev.Hash, Served: served, Origin: rev.Origin, CreatedAt: rev.CreatedAt,
		Taint: rev.Taint, Resources: []ResourceView{},
	}
	v.Origin.URL = sources.Redact(v.Origin.URL)
	types := make([]string, 0, len(rev.Config.Types))
	for t := range rev.Config.Types {
		types = append(types, t)
	}
	slices.Sort(types)
	for _, t := range types {
		for _, r := range rev.Config.Types[t].Resources {
			rv := ResourceView{Type: shortTypeName(t), Name: r.Name}
			if p := r.Source.String(); p != "" && p != "-" {
				rv.Source = p
			}
			if t == secretType {
				rv.Redacted = true
			} else {
				rv.Value = resourceJSON(t, r.Body)
			}
			v.Resources = append(v.Resources, rv)
		}
	}
	for _, es := range rev.Config.ExternalSecrets {
		v.Secrets = append(v.Secrets, ExternalSecretV{Name: es.Name, Kind: es.Kind})
	}
	return v, nil
}

// ResolveRevision expands a unique prefix of a revision hash in node's
// history (as legate status prints them) to the full hash; anything else
// is returned as given.
func ResolveRevision(e Engine, node, prefix string) string {
	st, ok := e.Node(node)
	if !ok || prefix == "" {
		return prefix
	}
	match := ""
	for _, r := range st.History {
		if strings.HasPrefix(r.Hash, prefix) {
			if match != "" && match != r.Hash {
				return prefix // ambiguous
			}
			match = r.Hash
		}
	}
	if match == "" {
		return prefix
	}
	return match
}

// resourceJSON is a resource as Envoy's JSON with the fields Envoy marks
// sensitive cleared (preview prints resources the same way), or a note
// saying why it cannot be shown.
func resourceJSON(typeURL string, body []byte) json.RawMessage {
	out, err := preview.ResourceJSON(typeURL, body, protojson.MarshalOptions{})
	if err != nil {
		note, _ := json.Marshal(map[string]string{"note": err.Error()})
		return note
	}
	return out
}

// shortTypeName is the message name of a type URL ("Cluster").
func shortTypeName(typeURL string) string {
	full := protoreflect.FullName(typeURL[strings.LastIndex(typeURL, "/")+1:])
	return string(full.Name())
}
