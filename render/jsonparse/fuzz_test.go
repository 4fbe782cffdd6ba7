package jsonparse

import (
	"encoding/json"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// FuzzParseJSON feeds arbitrary bytes to the JSON fast path: it must never
// panic or overflow the stack, and it may only accept what is JSON, giving
// the top-level value the kind encoding/json reads.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{
		`{"@type":"type.googleapis.com/envoy.config.cluster.v3.Cluster","name":"c","connect_timeout":"1s"}`,
		// Envoy Gateway-like: an ext_authz filter with map fields.
		`{"name":"envoy.filters.http.ext_authz","typed_config":{"@type":"type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz","http_service":{"server_uri":{"uri":"http://auth","cluster":"auth","timeout":"1s"}},"metadata_context_namespaces":["a"]}}`,
		// MARIN3R-like: an EnvoyConfig in JSON.
		`{"apiVersion":"marin3r.3scale.net/v1alpha1","kind":"EnvoyConfig","metadata":{"name":"e"},"spec":{"nodeID":"edge","resources":[{"type":"secret","generateFromTlsSecret":"c"}]}}`,
		`{"a":"\ud83d\ude00 \u00e9 \"q\" \\ \/ \b\f\n\r\t"}`,
		`[1, -0, 1e309, -1.5E-7, 12345678901234567890123]`,
		// Deep nesting: the limit itself is tested in adversarial_test.go;
		// seeds stay small so that the fuzzer mutates quickly.
		`{"a":` + strings.Repeat("[", 300),
		strings.Repeat(`{"a":[`, 100) + strings.Repeat("]}", 100),
		`{"a":1,}`, `{"a" 1}`, `"\ud800"`, `tru`, `{"a":1} {"b":2}`, "\xff", ``, ` `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := Parse(data)
		if err != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted what is not JSON: %q", data)
		}
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			return // valid JSON encoding/json still refuses (e.g. numbers out of range)
		}
		want := yaml.ScalarNode
		switch v.(type) {
		case map[string]any:
			want = yaml.MappingNode
		case []any:
			want = yaml.SequenceNode
		}
		if n.Kind != want {
			t.Fatalf("top-level kind %v, encoding/json reads %T", n.Kind, v)
		}
	})
}
