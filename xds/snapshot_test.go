package xds

import (
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
)

func TestSnapshotConsistent(t *testing.T) {
	lis := resource(t, "lis", apiListener(t, "lis", "rc"))
	rc := resource(t, "rc", routeTo("rc", "*", "c"))
	eds := resource(t, "c", edsCluster("c"))
	cla := resource(t, "c", assignment("c", "127.0.0.1", 1))
	set := func(rs ...render.Resource) TypeSnapshot { return TypeSnapshot{Version: "1", Resources: rs} }
	tests := []struct {
		name    string
		snap    Snapshot
		wantErr string
	}{
		{name: "complete", snap: Snapshot{Version: "v", Types: map[string]TypeSnapshot{
			resourcev3.ListenerType: set(lis), resourcev3.RouteType: set(rc),
			resourcev3.ClusterType: set(eds), resourcev3.EndpointType: set(cla),
		}}},
		{name: "clusters without EDS need no endpoints", snap: clusterSnapshot(t, "v", 2, 0)},
		{
			name: "missing route", snap: Snapshot{Version: "v", Types: map[string]TypeSnapshot{resourcev3.ListenerType: set(lis)}},
			wantErr: `listener "lis" refers to route configuration "rc"`,
		},
		{
			name: "missing endpoints", snap: Snapshot{Version: "v", Types: map[string]TypeSnapshot{resourcev3.ClusterType: set(eds)}},
			wantErr: `cluster "c" refers to endpoint assignment "c"`,
		},
		{name: "no version", snap: Snapshot{Types: map[string]TypeSnapshot{}}, wantErr: "snapshot has no version"},
		{
			name: "no type version", snap: Snapshot{Version: "v", Types: map[string]TypeSnapshot{resourcev3.RouteType: {Resources: []render.Resource{rc}}}},
			wantErr: "has no version",
		},
		{
			name: "duplicate name", snap: Snapshot{Version: "v", Types: map[string]TypeSnapshot{resourcev3.RouteType: set(rc, rc)}},
			wantErr: `has resource "rc" twice`,
		},
		{
			name: "undecodable listener", snap: Snapshot{Version: "v", Types: map[string]TypeSnapshot{resourcev3.ListenerType: set(render.Resource{Name: "x", Body: []byte{0xff}})}},
			wantErr: `decode listener "x"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.snap.Consistent()
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestSetSnapshotRejectsInconsistent(t *testing.T) {
	s, err := New(Options{})
	require.NoError(t, err)
	lis := resource(t, "lis", apiListener(t, "lis", "rc"))
	err = s.SetSnapshot("n", Snapshot{Version: "v", Types: map[string]TypeSnapshot{resourcev3.ListenerType: {Version: "1", Resources: []render.Resource{lis}}}})
	require.ErrorContains(t, err, `route configuration "rc"`)
	assert.Nil(t, s.node("n", false), "nothing is stored")
}
