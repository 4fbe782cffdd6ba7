package sds

import (
	"sync"
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
)

// fakeEndpoints serves, per "namespace/selector", what addrs holds, and
// counts reads.
type fakeEndpoints struct {
	mu    sync.Mutex
	addrs map[string]string
	reads int
}

func (f *fakeEndpoints) ResolveEndpoints(ext render.ExternalEndpoints) (render.Resource, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return render.Resource{Name: ext.ClusterName, Body: []byte(f.addrs[ext.Namespace+"/"+ext.Selector])}, nil
}

func (f *fakeEndpoints) set(key, v string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addrs[key] = v
}

func (f *fakeEndpoints) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

func endpointsPub(version string) revisions.Publication {
	p := pubWith(version, "cert")
	p.Types[resourcev3.ClusterType] = revisions.PublishedType{Version: "c1", Resources: []render.Resource{{Name: "api"}}}
	p.Types[resourcev3.EndpointType] = revisions.PublishedType{Version: "e1", Resources: []render.Resource{{Name: "static", Body: []byte("10.0.0.9")}}}
	p.ExternalEndpoints = []render.ExternalEndpoints{{ClusterName: "api", Namespace: "shop", Selector: "app=api"}}
	return p
}

// Generated endpoints are served beside the rendered ones; a change of
// the EndpointSlices of their namespace is pushed as a new version of the
// load assignments only (no secret read again, no other type changed),
// and a change elsewhere reads nothing.
func TestEndpointChangesArePushedAsEDSOnly(t *testing.T) {
	res := newFakeResolver()
	res.set("cert", "pem")
	eps := &fakeEndpoints{addrs: map[string]string{"shop/app=api": "10.0.0.1"}}
	var rec recorder
	s := NewServer(res, rec.set, logr.Discard()).WithEndpoints(eps)
	require.NoError(t, s.Publish("edge", endpointsPub("v1")))
	first := rec.sets[0]
	eds := first.Types[resourcev3.EndpointType]
	require.Len(t, eds.Resources, 2)
	assert.Equal(t, "api", eds.Resources[0].Name)
	assert.Equal(t, "10.0.0.1", string(eds.Resources[0].Body))
	assert.Equal(t, "static", eds.Resources[1].Name, "the rendered load assignments stay")
	assert.True(t, s.ReferencesEndpoints("shop"))
	assert.False(t, s.ReferencesEndpoints("other"))

	s.RefreshEndpoints("other")
	assert.Equal(t, 1, eps.count(), "another namespace's slices are not read")
	s.RefreshEndpoints("shop")
	assert.Equal(t, 1, rec.count(), "unchanged endpoints are not pushed")

	eps.set("shop/app=api", "10.0.0.2")
	s.RefreshEndpoints("shop")
	require.Equal(t, 2, rec.count(), "changed endpoints are pushed")
	second := rec.sets[1]
	assert.Equal(t, "v1", second.Version, "no new publication")
	assert.NotEqual(t, eds.Version, second.Types[resourcev3.EndpointType].Version)
	assert.Equal(t, "10.0.0.2", string(second.Types[resourcev3.EndpointType].Resources[0].Body))
	for _, url := range []string{resourcev3.ClusterType, resourcev3.SecretType} {
		assert.Equal(t, first.Types[url].Version, second.Types[url].Version, url)
	}
	assert.Equal(t, 1, res.count("cert"), "no secret is read again for an endpoint change")

	// A full refresh reads both and pushes nothing new.
	s.Refresh()
	assert.Equal(t, 2, rec.count())
	assert.Equal(t, 2, res.count("cert"))
}

// A home that builds no endpoints refuses a publication that names some,
// as a fault of the revision, not a wait; and a generated load assignment
// may not shadow a rendered one.
func TestGeneratedEndpointsRefusedWhereNotBuilt(t *testing.T) {
	res := newFakeResolver()
	res.set("cert", "pem")
	var rec recorder
	err := NewServer(res, rec.set, logr.Discard()).Publish("edge", endpointsPub("v1"))
	require.Error(t, err)
	assert.NotErrorIs(t, err, revisions.ErrNotReady)
	assert.Contains(t, err.Error(), `endpoints of cluster "api"`)
	assert.Contains(t, err.Error(), "does not build endpoints from EndpointSlices")

	eps := &fakeEndpoints{addrs: map[string]string{}}
	pub := endpointsPub("v1")
	pub.ExternalEndpoints[0].ClusterName = "static"
	err = NewServer(res, rec.set, logr.Discard()).WithEndpoints(eps).Publish("edge", pub)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `load assignment "static"`)
	assert.Zero(t, rec.count())
}
