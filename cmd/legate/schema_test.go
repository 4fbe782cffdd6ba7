package main

import (
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runSchema(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return execute(t, newSchemaCommand(), args...)
}

func TestSchemaCommandPrintsCompilableCUE(t *testing.T) {
	out, err := runSchema(t, "Cluster")
	require.NoError(t, err)
	assert.Contains(t, out, "package envoy")
	assert.Contains(t, out, "#Cluster: #envoy_config_cluster_v3_Cluster")

	ctx := cuecontext.New()
	v := ctx.CompileString(out)
	require.NoError(t, v.Err())
	def := v.LookupPath(cue.ParsePath("#Cluster"))
	good := ctx.CompileString(`{name: "api", connect_timeout: "0.25s", type: "STRICT_DNS"}`)
	assert.NoError(t, def.UnifyAccept(good, def).Validate(cue.Concrete(true)))
	bad := ctx.CompileString(`{name: "api", connect_timout: "0.25s"}`)
	assert.Error(t, def.UnifyAccept(bad, def).Validate(cue.Concrete(true)))
}

func TestSchemaCommandByFullNameAndPackage(t *testing.T) {
	out, err := runSchema(t, "type.googleapis.com/envoy.config.route.v3.RouteConfiguration", "--package", "routes")
	require.NoError(t, err)
	assert.Contains(t, out, "package routes")
	assert.Contains(t, out, "#RouteConfiguration: #envoy_config_route_v3_RouteConfiguration")
}

func TestSchemaCommandUntranslated(t *testing.T) {
	out, err := runSchema(t, "Cluster", "--untranslated")
	require.NoError(t, err)
	assert.Contains(t, out, "envoy.config.cluster.v3.Cluster.connect_timeout: duration range")
}

func TestSchemaCommandUnknownType(t *testing.T) {
	_, err := runSchema(t, "NoSuchMessage")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no message type named")
}
