package cue

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/legate-dev/legate/render"
)

// schemaCheck validates every decoded resource against the generated
// schema in both JSON spellings.
type schemaCheck struct {
	t     *testing.T
	stage *Stage
	count int
}

func (c *schemaCheck) Check(resources []*render.Decoded) []render.Diagnostic {
	var out []render.Diagnostic
	for _, d := range resources {
		for _, protoNames := range []bool{false, true} {
			data, err := protojson.MarshalOptions{UseProtoNames: protoNames}.Marshal(d.Message)
			require.NoError(c.t, err)
			errs, err := c.stage.ValidateJSON(d.TypeURL, data)
			require.NoError(c.t, err)
			for _, e := range errs {
				out = append(out, d.Diagnose(e.Field, "schema", e.Message))
			}
			c.count++
		}
	}
	return out
}

// TestSchemaAcceptsValidCorpus renders the renderer's corpus of real
// configurations and the examples, and checks that every resource they
// hold satisfies the generated CUE schema.
func TestSchemaAcceptsValidCorpus(t *testing.T) {
	dirs := []string{"../testdata/corpus/envoy", "../testdata/corpus/marin3r", "../testdata/in/valid-targeting", "../testdata/in/envoyconfig"}
	examples, _ := filepath.Glob("../../examples/*")
	dirs = append(dirs, examples...)
	check := &schemaCheck{t: t, stage: New()}
	for _, dir := range dirs {
		t.Run(strings.TrimLeft(dir, "./"), func(t *testing.T) {
			_, err := os.Stat(dir)
			require.NoError(t, err, "a corpus directory of this test is missing")
			before := check.count
			// CUE packages become documents as legate serve renders them.
			res := render.Render(os.DirFS(dir), render.Options{DefaultNode: "default", Generators: []render.Generator{New()}, Checks: []render.Check{check}})
			var schemaDiags []string
			for _, d := range res.Diagnostics {
				if d.Rule == "schema" {
					schemaDiags = append(schemaDiags, d.String())
				}
			}
			assert.Empty(t, schemaDiags)
			assert.Greater(t, check.count, before, "no resource of %s was checked", dir)
		})
	}
}

func TestSchemaRejectsInvalid(t *testing.T) {
	const (
		cluster  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
		listener = "type.googleapis.com/envoy.config.listener.v3.Listener"
		routes   = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	)
	tests := []struct {
		name, typeURL, json string
		field, message      string
	}{
		{"unknown field", cluster, `{"name": "a", "conect_timeout": "1s"}`, "conect_timeout", "field not allowed"},
		{"bad enum", cluster, `{"name": "a", "type": "STRICT"}`, "type", "matches none|want one of"},
		{"bad duration", cluster, `{"name": "a", "connect_timeout": "5 seconds"}`, "connect_timeout", "out of bound"},
		{"pgv min_len", cluster, `{"name": ""}`, "name", "strings.MinRunes(1)"},
		{"pgv required name", cluster, `{"type": "STATIC"}`, "name", "required"},
		{"oneof twice", cluster, `{"name": "a", "type": "STATIC", "cluster_type": {"name": "x"}}`, "", "oneof"},
		{"required oneof", routes, `{"name": "r", "virtual_hosts": [{"name": "v", "domains": ["*"], "routes": [{"route": {"cluster": "c"}}]}]}`, "virtual_hosts[0].routes[0].match", "required"},
		{"list of the wrong kind", routes, `{"name": "r", "virtual_hosts": {"name": "v"}}`, "virtual_hosts", "mismatched types"},
		{"unknown Any type", listener, `{"name": "l", "filter_chains": [{"filters": [{"name": "x", "typed_config": {"@type": "type.googleapis.com/nope.Nope"}}]}]}`, "filter_chains[0].filters[0].typed_config", ""},
		{"wrong type", cluster, `{"name": "a", "per_connection_buffer_limit_bytes": true}`, "per_connection_buffer_limit_bytes", "matches none"},
		{"port range", listener, `{"name": "l", "address": {"socket_address": {"address": "0.0.0.0", "port_value": 70000}}}`, "address.socket_address.port_value", "out of bound"},
		{"repeated min_items", routes, `{"name": "r", "virtual_hosts": [{"name": "v", "domains": []}]}`, "virtual_hosts[0].domains", "MinItems"},
		{"inside Any", listener, `{"name": "l", "filter_chains": [{"filters": [{"name": "hcm", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager", "stat_prefix": "x", "routeConfig": {"name": "r"}, "bogus": 1}}]}]}`, "filter_chains[0].filters[0].typed_config.bogus", "field not allowed"},
	}
	s := New()
	validators := map[string]func(string, []byte) ([]SchemaError, error){
		"fast":  s.ValidateJSON,
		"whole": s.validateWhole,
	}
	for _, tt := range tests {
		for vname, validate := range validators {
			t.Run(tt.name+"/"+vname, func(t *testing.T) {
				errs, err := validate(tt.typeURL, []byte(tt.json))
				require.NoError(t, err)
				require.NotEmpty(t, errs)
				var found bool
				for _, e := range errs {
					if strings.HasPrefix(e.Field, tt.field) && slices.ContainsFunc(strings.Split(tt.message, "|"), func(m string) bool { return strings.Contains(e.Message, m) }) {
						found = true
					}
					assert.NotContains(t, e.Message, "#envoy_", "message shows a generated definition name")
				}
				assert.True(t, found, "want %s: %s in %+v", tt.field, tt.message, errs)
			})
		}
	}
}

func TestSchemaAcceptsBothSpellings(t *testing.T) {
	s := New()
	for _, js := range []string{
		`{"name": "a", "connect_timeout": "0.25s", "lb_policy": "ROUND_ROBIN", "max_requests_per_connection": 5}`,
		`{"name": "a", "connectTimeout": "0.25s", "lbPolicy": 1, "maxRequestsPerConnection": "5"}`,
		`{"name": "a", "connectTimeout": null, "per_connection_buffer_limit_bytes": 4294967295}`,
	} {
		errs, err := s.ValidateJSON("envoy.config.cluster.v3.Cluster", []byte(js))
		require.NoError(t, err)
		assert.Empty(t, errs, js)
	}
}

// TestSchemaErrorsGolden renders YAML resources with several mistakes
// each: the proto path reports the first of each resource, the CUE schema
// adds the rest, and nothing is reported twice.
func TestSchemaErrorsGolden(t *testing.T) {
	res := renderDir(t, "testdata/schema")
	got := diagLines(res.Diagnostics)
	golden := filepath.Join("testdata", "schema.golden")
	if *update {
		require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), got)
	fields := map[string]int{}
	for _, d := range res.Diagnostics {
		fields[d.Pos.File+" "+foldPath(d.Field)]++
	}
	for f, n := range fields {
		assert.Equal(t, 1, n, "%s reported %d times", f, n)
	}
}
