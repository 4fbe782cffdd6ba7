package cue

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/legate-dev/legate/render"
)

// synthetic is a configuration of n routes spread over n/10 virtual hosts,
// one cluster per virtual host and one listener, in Envoy's JSON form.
type synthetic struct {
	typeURLs []string
	docs     [][]byte
}

func newSynthetic(n int) synthetic {
	var s synthetic
	add := func(typeURL, doc string) {
		s.typeURLs = append(s.typeURLs, typeURL)
		s.docs = append(s.docs, []byte(doc))
	}
	add(policyKeys["listener"], `{"name": "http", "address": {"socket_address": {"address": "0.0.0.0", "port_value": 8080}},
	"filter_chains": [{"filters": [{"name": "hcm", "typed_config": {
	"@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
	"stat_prefix": "http", "rds": {"route_config_name": "main", "config_source": {"ads": {}, "resource_api_version": "V3"}},
	"http_filters": [{"name": "router", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}]}}]}]}`)
	hosts := max(n/10, 1)
	vhosts := ""
	for h := range hosts {
		routes := ""
		for r := range n / hosts {
			if r > 0 {
				routes += ","
			}
			routes += fmt.Sprintf(`{"match": {"prefix": "/p%d/"}, "route": {"cluster": "c%d", "timeout": "%ds"}}`, r, h, 1+r%9)
		}
		if h > 0 {
			vhosts += ","
		}
		vhosts += fmt.Sprintf(`{"name": "vh%d", "domains": ["h%d.example.com"], "routes": [%s]}`, h, h, routes)
		add(policyKeys["cluster"], fmt.Sprintf(`{"name": "c%d", "connect_timeout": "0.25s", "type": "STRICT_DNS", "load_assignment": {"cluster_name": "c%d",
		"endpoints": [{"lb_endpoints": [{"endpoint": {"address": {"socket_address": {"address": "c%d.internal", "port_value": 8080}}}}]}]}}`, h, h, h))
	}
	add(policyKeys["route_configuration"], fmt.Sprintf(`{"name": "main", "virtual_hosts": [%s]}`, vhosts))
	return s
}

// decodeAll is the proto-only path: strict protojson decoding and
// ValidateAll, no positions.
func (s synthetic) decodeAll(tb testing.TB) []*render.Decoded {
	out := make([]*render.Decoded, len(s.docs))
	for i, doc := range s.docs {
		msg, err := newMessage(s.typeURLs[i])
		require.NoError(tb, err)
		require.NoError(tb, protojson.Unmarshal(doc, msg))
		require.NoError(tb, msg.(interface{ ValidateAll() error }).ValidateAll())
		out[i] = &render.Decoded{Nodes: []string{"edge"}, TypeURL: s.typeURLs[i], Message: msg}
	}
	return out
}

func newMessage(typeURL string) (proto.Message, error) {
	return render.Decode(typeURL, nil)
}

func examplePolicies(tb testing.TB) map[string][]byte {
	files := map[string][]byte{}
	for _, name := range []string{"clusters.cue", "listeners.cue", "routes.cue", "http-filters.cue"} {
		data, err := os.ReadFile("../../examples/policy/policy/" + name)
		require.NoError(tb, err)
		files["policy/"+name] = data
	}
	return files
}

// BenchmarkCUEStage compares, on the same synthetic configurations, the
// proto-only path (protojson decoding + ValidateAll) with the CUE stage:
// the four example policies over the decoded resources, and the generated
// schema over the JSON documents.
func BenchmarkCUEStage(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		syn := newSynthetic(n)
		b.Run(fmt.Sprintf("routes=%d/proto", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				syn.decodeAll(b)
			}
		})
		decoded := syn.decodeAll(b)
		b.Run(fmt.Sprintf("routes=%d/cue-policies", n), func(b *testing.B) {
			b.ReportAllocs()
			s := New()
			require.Empty(b, s.LoadPolicies(examplePolicies(b)))
			for b.Loop() {
				if diags := s.Check(decoded); len(diags) > 0 {
					b.Fatal(diags[0].String())
				}
			}
		})
		// cue-schema is the fast schema check of every document: the
		// worst case, as if every resource had failed the proto path
		// (valid resources are not re-checked on the render path).
		b.Run(fmt.Sprintf("routes=%d/cue-schema", n), func(b *testing.B) {
			b.ReportAllocs()
			s := New()
			for b.Loop() {
				for i, doc := range syn.docs {
					errs, err := s.ValidateJSON(syn.typeURLs[i], doc)
					if err != nil || len(errs) > 0 {
						b.Fatal(err, errs)
					}
				}
			}
		})
		// cue-schema-cold drops the shared tables and compiled constraints
		// before each iteration: the first check after start-up.
		b.Run(fmt.Sprintf("routes=%d/cue-schema-cold", n), func(b *testing.B) {
			b.ReportAllocs()
			s := New()
			for b.Loop() {
				s.fast = NewSchema()
				for i, doc := range syn.docs {
					errs, err := s.ValidateJSON(syn.typeURLs[i], doc)
					if err != nil || len(errs) > 0 {
						b.Fatal(err, errs)
					}
				}
			}
		})
		if n > 100 {
			continue // whole-definition unification takes seconds to minutes here: see docs/benchmarks.md.
		}
		b.Run(fmt.Sprintf("routes=%d/cue-schema-whole", n), func(b *testing.B) {
			b.ReportAllocs()
			s := New()
			for b.Loop() {
				for i, doc := range syn.docs {
					errs, err := s.validateWhole(syn.typeURLs[i], doc)
					if err != nil || len(errs) > 0 {
						b.Fatal(err, errs)
					}
				}
			}
		})
	}
}
