package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runValidate(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return execute(t, newValidateCommand(), args...)
}

// The Envoy bootstraps of examples/envoy decode strictly and pass Envoy's
// validation rules, so the docs point Envoy users at working files.
// They are proxy bootstraps (dynamic_resources from legate): each is
// checked on its own and its static cluster stays in the proxy, so the
// directory holding both passes too.
func TestValidateEnvoyBootstrapExamples(t *testing.T) {
	for _, dir := range []string{"plaintext", "mtls", "."} {
		out, err := runValidate(t, "../../examples/envoy/"+dir)
		require.NoError(t, err, out)
		assert.Equal(t, "valid: no resources rendered\n", out, dir)
	}
}

func TestValidateQuickstart(t *testing.T) {
	out, err := runValidate(t, "../../examples/quickstart")
	require.NoError(t, err)
	assert.Regexp(t, `^node edge: 1 Cluster, 1 ClusterLoadAssignment, 1 Listener, 1 RouteConfiguration \(hash [0-9a-f]{12}\)\n$`, out)
}

func brokenRepo(t *testing.T) string {
	t.Helper()
	return routesRepo(t, "validate_clusters: true")
}

// routesRepo is a repository with one RDS route configuration that routes
// to a cluster that does not exist; extra is a field of the configuration.
func routesRepo(t *testing.T, extra string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "nodes", "edge"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "nodes", "edge", "routes.yaml"), []byte(`resources:
- "@type": type.googleapis.com/envoy.config.route.v3.RouteConfiguration
  name: main
  `+extra+`
  virtual_hosts:
  - name: all
    domains: ["*"]
    routes:
    - match: {prefix: /}
      route: {cluster: api-v2}
`), 0o644))
	return dir
}

func TestValidateBrokenText(t *testing.T) {
	dir := brokenRepo(t)
	out, err := runValidate(t, dir)
	require.ErrorIs(t, err, errInvalid)
	assert.Equal(t, filepath.ToSlash(dir)+`/nodes/edge/routes.yaml:10:24: route "main" virtual_hosts[0].routes[0].route.cluster: cluster "api-v2" is not defined for node "edge" (Envoy rejects it: validate_clusters is true)
invalid: 1 problem(s)
`, out)
}

// Warnings are printed, and alone they do not fail validation: Envoy
// accepts a route to a missing cluster delivered over RDS.
func TestValidateWarningsOnly(t *testing.T) {
	dir := routesRepo(t, "validate_clusters: false")
	out, err := runValidate(t, dir)
	require.NoError(t, err, out)
	assert.Regexp(t, `^`+regexp.QuoteMeta(filepath.ToSlash(dir))+`/nodes/edge/routes.yaml:10:24: warning: route "main" virtual_hosts\[0\].routes\[0\].route.cluster: cluster "api-v2" is not defined for node "edge": Envoy accepts this .*\nnode edge: 1 RouteConfiguration \(hash [0-9a-f]{12}\)\n$`, out)
	out, err = runValidate(t, "-o", "github", dir)
	require.NoError(t, err, out)
	assert.Contains(t, out, "::warning file="+filepath.ToSlash(dir)+"/nodes/edge/routes.yaml,line=10,col=24,title=legate reference::route \"main\"")
}

func TestValidateBrokenGitHub(t *testing.T) {
	dir := brokenRepo(t)
	out, err := runValidate(t, "-o", "github", dir)
	require.ErrorIs(t, err, errInvalid)
	assert.Contains(t, out, "::error file="+filepath.ToSlash(dir)+"/nodes/edge/routes.yaml,line=10,col=24,title=legate reference::route \"main\" virtual_hosts[0].routes[0].route.cluster: cluster \"api-v2\" is not defined for node \"edge\" (Envoy rejects it: validate_clusters is true)\n")
}

func TestValidateJSON(t *testing.T) {
	out, err := runValidate(t, "--output", "json", "../../examples/grpc")
	require.NoError(t, err)
	var got struct {
		Valid bool `json:"valid"`
		Nodes map[string]struct {
			Resources map[string]int `json:"resources"`
		} `json:"nodes"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.True(t, got.Valid)
	assert.Equal(t, 1, got.Nodes["grpc-client"].Resources["Listener"])
}

func TestValidateNodeFlagForLooseFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "cluster.yaml")
	require.NoError(t, os.WriteFile(f, []byte(`"@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
name: c
type: STATIC
`), 0o644))
	_, err := runValidate(t, f)
	require.ErrorIs(t, err, errInvalid)
	out, err := runValidate(t, "--node", "n1", f)
	require.NoError(t, err)
	assert.Contains(t, out, "node n1: 1 Cluster")
}

func TestValidateRejectsUnknownOutput(t *testing.T) {
	_, err := runValidate(t, "-o", "yaml", ".")
	require.ErrorContains(t, err, `--output "yaml"`)
}

// A single file argument gets its nodes from the nearest legate.yaml, as it
// would inside a directory render.
func TestValidateFileUsesLegateYAML(t *testing.T) {
	t.Chdir("../../examples")
	out, err := runValidate(t, "grpc/greeter.yaml")
	require.NoError(t, err)
	assert.Regexp(t, `^node grpc-client: 1 Cluster, 1 ClusterLoadAssignment, 1 Listener, 1 RouteConfiguration`, out)
}

// The same file named twice, directly or through its directory, is read
// once: its resources are not their own duplicates.
func TestValidateSamePathTwice(t *testing.T) {
	for _, args := range [][]string{
		{"../../examples/quickstart", "../../examples/quickstart"},
		{"../../examples/quickstart", "../../examples/quickstart/"},
		{"../../examples/quickstart", "../../examples/quickstart/nodes/edge/listener.yaml"},
	} {
		out, err := runValidate(t, args...)
		require.NoError(t, err, "%v: %s", args, out)
		assert.Regexp(t, `^node edge: 1 Cluster, 1 ClusterLoadAssignment, 1 Listener, 1 RouteConfiguration`, out, args)
	}
}

// A checkout whose link leads, through another link, to a file of the
// machine: validate names the link and never shows the file's content,
// whether it reads the directory or is given the file.
func TestValidateKeepsLinksInsideTheCheckout(t *testing.T) {
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "creds.yaml"), []byte("hunter2pw is the password\n"), 0o600))
	dir := t.TempDir()
	require.NoError(t, os.Symlink("..", filepath.Join(dir, "up")))
	require.NoError(t, os.Symlink("up/"+filepath.Base(outside)+"/creds.yaml", filepath.Join(dir, "leak.yaml")))

	out, err := runValidate(t, dir)
	require.Error(t, err)
	assert.Contains(t, out, "leak.yaml")
	assert.NotContains(t, out, "hunter2pw")

	t.Chdir(dir)
	out, err = runValidate(t, "leak.yaml")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "leak.yaml: open leak.yaml: a symbolic link on the way leads outside the directory")
	assert.NotContains(t, out+err.Error(), "hunter2pw")
}
