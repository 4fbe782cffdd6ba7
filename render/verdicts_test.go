package render

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
)

// verdict renders files (path → content) for node "n" and returns the
// errors and warnings as compiler-style lines.
func verdict(t *testing.T, files map[string]string) (errs, warns []string) {
	t.Helper()
	fsys := fstest.MapFS{}
	for p, data := range files {
		fsys[p] = &fstest.MapFile{Data: []byte(data)}
	}
	res := Render(fsys, Options{DefaultNode: "n"})
	errs, warns = []string{}, []string{}
	for _, d := range res.Diagnostics {
		errs = append(errs, d.String())
	}
	for _, d := range res.Warnings {
		warns = append(warns, d.String())
	}
	if len(res.Diagnostics) == 0 {
		assert.NotNil(t, res.Nodes, "a render without errors has nodes")
	}
	return errs, warns
}

func routeWithFilterConfig(fc string) string {
	return `"@type": type.googleapis.com/envoy.config.route.v3.RouteConfiguration
name: r
virtual_hosts:
- name: v
  domains: ["*"]
  routes:
  - match: {prefix: /}
    direct_response: {status: 200}
    typed_per_filter_config:
      envoy.filters.http.buffer:
        "@type": type.googleapis.com/envoy.config.route.v3.FilterConfig
` + fc
}

// Envoy Gateway re-enables per route a filter it disabled in the
// connection manager with an empty config; only a FilterConfig that
// neither configures nor disables the filter is refused.
func TestFilterConfigEmptyConfig(t *testing.T) {
	errs, _ := verdict(t, map[string]string{"r.yaml": routeWithFilterConfig("        config: {}\n")})
	assert.Empty(t, errs)
	errs, _ = verdict(t, map[string]string{"r.yaml": routeWithFilterConfig("        disabled: true\n")})
	assert.Empty(t, errs)
	errs, _ = verdict(t, map[string]string{"r.yaml": routeWithFilterConfig("        is_optional: true\n")})
	assert.Equal(t, []string{`r.yaml:11:9: route "r" virtual_hosts[0].routes[0].typed_per_filter_config["envoy.filters.http.buffer"]: FilterConfig has no config and is not disabled, which Envoy refuses: set config ({} enables the filter on this route) or disabled: true`}, errs)
}
