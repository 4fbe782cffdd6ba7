package controller_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/backend"
	"github.com/legate-dev/legate/test/internal/ctltest"
	"github.com/legate-dev/legate/test/internal/testpki"
)

// marin3rManifest reads a MARIN3R EnvoyConfig of testdata/marin3r and
// changes its apiVersion, and nothing else, to legate's. Strict decoding:
// every field MARIN3R's manifest sets is one legate's type has.
func marin3rManifest(t *testing.T, name string) *v1alpha1.EnvoyConfig {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "marin3r", name))
	require.NoError(t, err)
	require.Contains(t, string(data), "apiVersion: marin3r.3scale.net/v1alpha1\n")
	data = []byte(strings.Replace(string(data), "apiVersion: marin3r.3scale.net/v1alpha1\n", "apiVersion: legate.dev/v1alpha1\n", 1))
	var ec v1alpha1.EnvoyConfig
	require.NoError(t, yaml.UnmarshalStrict(data, &ec))
	ec.Namespace = "default"
	return &ec
}

// names are the names of the resources of one response.
func names(t *testing.T, s *adsStream) []string {
	t.Helper()
	var out []string
	for _, r := range s.next(t).Resources {
		m, err := r.UnmarshalNew()
		require.NoError(t, err)
		named, ok := m.(interface{ GetName() string })
		require.True(t, ok, r.TypeUrl)
		out = append(out, named.GetName())
	}
	slices.Sort(out)
	return out
}

// certCN is the subject common name of a PEM certificate.
func certCN(t *testing.T, chain []byte) string {
	t.Helper()
	block, _ := pem.Decode(chain)
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return cert.Subject.CommonName
}

// MARIN3R manifests, in both of MARIN3R's forms, with only their
// apiVersion changed, apply and are served: their listeners, routes,
// scoped routes, clusters, the Secret's certificate over SDS and the
// EndpointSlices' endpoints over EDS; the objects say InSync and Ready.
func TestMARIN3RManifestsAreServed(t *testing.T) {
	t.Parallel()
	cluster := envtest.Start(t)
	c := ctltest.Client(t, cluster.Config)
	ctl := startWith(t, cluster.Config, func(o *controller.Options) { o.XDSInsecureSecrets = []string{"*"} })
	ctx := context.Background()
	ca := testpki.NewCA(t, "test-ca")
	for _, name := range []string{"shop-cert", "catalog-cert"} {
		_, secret := withTLSSecret(t, ca, name+".example")
		secret.Name = name
		require.NoError(t, c.Create(ctx, secret))
	}
	slice := endpointSlice("default", 8080)
	slice.Name, slice.Labels["kubernetes.io/service-name"], slice.Ports[0].Name = "shop-backend-1", "shop-backend", ptr.To("http")
	require.NoError(t, c.Create(ctx, slice))

	shop, catalog := marin3rManifest(t, "resources.yaml"), marin3rManifest(t, "envoyresources.yaml")
	for _, ec := range []*v1alpha1.EnvoyConfig{shop, catalog} {
		require.NoError(t, c.Create(ctx, ec))
	}
	for _, ec := range []*v1alpha1.EnvoyConfig{shop, catalog} {
		require.Eventually(t, func() bool {
			got := get(t, c, ec)
			ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
			return got.Status.CacheState != nil && *got.Status.CacheState == v1alpha1.CacheInSync && ready != nil && ready.Status == "True"
		}, 60*time.Second, 50*time.Millisecond, "%s is served", ec.Name)
	}

	plain := insecure.NewCredentials()
	assert.Equal(t, []string{"https"}, names(t, newADSStream(t, ctl.XDSAddr(), plain, "shop", resourcev3.ListenerType)))
	assert.Equal(t, []string{"shop"}, names(t, newADSStream(t, ctl.XDSAddr(), plain, "shop", resourcev3.RouteType, "shop")))
	assert.Equal(t, []string{"shop-backend"}, names(t, newADSStream(t, ctl.XDSAddr(), plain, "shop", resourcev3.ClusterType)))
	assert.Equal(t, "shop-cert.example", certCN(t, certOf(t, newADSStream(t, ctl.XDSAddr(), plain, "shop", resourcev3.SecretType, "shop-cert").next(t))))
	eds := newADSStream(t, ctl.XDSAddr(), plain, "shop", resourcev3.EndpointType, "shop-backend").next(t)
	require.Len(t, eds.Resources, 1)
	var cla endpointv3.ClusterLoadAssignment
	require.NoError(t, eds.Resources[0].UnmarshalTo(&cla))
	require.Len(t, cla.Endpoints, 1)
	sa := cla.Endpoints[0].LbEndpoints[0].GetEndpoint().GetAddress().GetSocketAddress()
	assert.Equal(t, backend.PodIP+":8080", fmt.Sprintf("%s:%d", sa.Address, sa.GetPortValue()), "the Service's endpoint on its port named http")

	assert.Equal(t, []string{"https"}, names(t, newADSStream(t, ctl.XDSAddr(), plain, "catalog", resourcev3.ListenerType)))
	assert.Equal(t, []string{"catalog-scope"}, names(t, newADSStream(t, ctl.XDSAddr(), plain, "catalog", resourcev3.ScopedRouteType)))
	assert.Equal(t, []string{"catalog-backend"}, names(t, newADSStream(t, ctl.XDSAddr(), plain, "catalog", resourcev3.ClusterType)))
	assert.Equal(t, "catalog-cert.example", certCN(t, certOf(t, newADSStream(t, ctl.XDSAddr(), plain, "catalog", resourcev3.SecretType, "catalog-cert").next(t))))
}
