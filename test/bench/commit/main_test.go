package main

import (
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfigRenders: every generation is valid for legate's renderer and
// go-control-plane, has the requested number of routes, and differs from
// the previous one in the route configuration only.
func TestConfigRenders(t *testing.T) {
	s1, routes1, err := gcpSnapshot(configFiles(1000, 1, 8080))
	require.NoError(t, err)
	s2, routes2, err := gcpSnapshot(configFiles(1000, 2, 8080))
	require.NoError(t, err)
	assert.NotEqual(t, routes1, routes2)
	for _, typ := range []string{resourcev3.ListenerType, resourcev3.ClusterType, resourcev3.EndpointType} {
		assert.Equal(t, s1.GetVersion(typ), s2.GetVersion(typ), typ)
	}
	rc, ok := s1.GetResources(resourcev3.RouteType)[benchRoutes].(*routev3.RouteConfiguration)
	require.True(t, ok)
	require.Len(t, rc.GetVirtualHosts(), 1)
	assert.Len(t, rc.GetVirtualHosts()[0].GetRoutes(), 1000)
}
