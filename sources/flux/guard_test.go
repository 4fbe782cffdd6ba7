package flux_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/netguard"
	"github.com/legate-dev/legate/sources/flux"
)

// The controller downloads Flux artifacts through the fetch guard with
// private addresses allowed (source-controller's Service): loopback and
// the metadata address stay refused, and so does a redirect to another
// host; allowed, the artifact is read as before.
func TestGuardedArtifactDownload(t *testing.T) {
	t.Parallel()
	f := newFixture(t, flux.KindGitRepository)
	blob := tarball(t, "envoy/a.yaml", "a: 1")
	f.publish("/gitrepository/team-a/envoy/1.tar.gz", blob, digestOf(blob), "main@sha1:"+strings.Repeat("1", 40), nil)
	guarded := func(g *netguard.Guard) *flux.Source {
		src, err := flux.New(flux.Config{
			Name: "envoysource/team-a/cfg", Reader: f.reader, Kind: flux.KindGitRepository,
			Key: types.NamespacedName{Namespace: "team-a", Name: "envoy"}, Path: "./envoy", HTTP: g.WithPrivate().Client(0),
		})
		require.NoError(t, err)
		return src
	}
	_, err := guarded(netguard.New(nil, "")).Fetch(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "resolves to a loopback address")
	assert.Zero(t, f.gets)

	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	res, err := guarded(netguard.New(loopback, "")).Fetch(context.Background())
	require.NoError(t, err)
	assert.NotNil(t, res)

	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	}))
	t.Cleanup(redirect.Close)
	setURL(t, f, redirect.URL+"/gitrepository/team-a/envoy/2.tar.gz")
	_, err = guarded(netguard.New(loopback, "")).Fetch(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "redirect from 127.0.0.1 to 169.254.169.254 refused")
}

// setURL points the object's status.artifact at u, its digest kept.
func setURL(t *testing.T, f *fixture, u string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, f.reader.Get(ctx, client.ObjectKeyFromObject(f.obj), f.obj))
	require.NoError(t, unstructured.SetNestedField(f.obj.Object, u, "status", "artifact", "url"))
	require.NoError(t, f.reader.Update(ctx, f.obj))
}
