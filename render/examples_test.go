package render

import (
	"os"
	"path/filepath"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExamples renders every example repository under examples/ that holds
// configuration files: each must be valid.
func TestExamples(t *testing.T) {
	for _, name := range []string{"quickstart", "grpc"} {
		t.Run(name, func(t *testing.T) {
			res := Render(os.DirFS(filepath.Join("..", "examples", name)), Options{})
			require.Empty(t, res.Diagnostics)
			require.NotEmpty(t, res.Nodes)
		})
	}
}

func TestQuickstartShape(t *testing.T) {
	res := Render(os.DirFS("../examples/quickstart"), Options{})
	require.True(t, res.OK(), "%v", res.Diagnostics)
	edge := res.Nodes["edge"]
	require.NotNil(t, edge)
	for _, url := range []string{ListenerType, RouteType, ClusterType, EndpointType} {
		assert.Len(t, edge.Types[url].Resources, 1, url)
	}
	l := edge.Types[ListenerType].Resources[0]
	m, err := Decode(ListenerType, l.Body)
	require.NoError(t, err)
	sa := m.(*listenerv3.Listener).GetAddress().GetSocketAddress()
	assert.Equal(t, "127.0.0.1", sa.GetAddress())
	assert.Equal(t, uint32(10000), sa.GetPortValue())
	assert.Equal(t, Position{File: "nodes/edge/listener.yaml", Line: 2, Column: 3}, l.Source)
}
