package main

import (
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPercentile(t *testing.T) {
	tests := []struct {
		xs   []float64
		p    float64
		want float64
	}{
		{nil, 50, 0},
		{[]float64{3}, 99, 3},
		{[]float64{5, 1, 3, 2, 4}, 50, 3},
		{[]float64{5, 1, 3, 2, 4}, 99, 5},
		{[]float64{1, 2, 3, 4}, 50, 2},
	}
	for _, tt := range tests {
		assert.InDelta(t, tt.want, percentile(tt.xs, tt.p), 0, "%v p%v", tt.xs, tt.p)
	}
}

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
