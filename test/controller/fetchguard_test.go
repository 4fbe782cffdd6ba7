package controller_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/controller"
	"github.com/legate-dev/legate/test/envtest"
	"github.com/legate-dev/legate/test/internal/ctltest"
)

// A tenant's EnvoySources cannot make legate controller fetch from
// loopback or the cloud metadata address (blind SSRF, a port scan through
// error texts): Git, OCI and Flux artifact URLs are refused at dial time
// unless --fetch-allow-networks allows them, the server named sees no
// request, and the status says why without a dial error.
func TestEnvoySourcesCannotReachInternalAddresses(t *testing.T) {
	t.Parallel()
	cluster := envtest.Start(t, envtest.FluxCRDs(t))
	c := ctltest.Client(t, cluster.Config)
	startWith(t, cluster.Config, func(o *controller.Options) { o.FetchAllowNetworks = nil }) // the default
	ctx := context.Background()
	var hits atomic.Int32
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	t.Cleanup(internal.Close)
	host := strings.TrimPrefix(internal.URL, "http://")

	repo := createGitRepository(t, c, "default", "metadata", "https://git.example/team/envoy-config")
	setArtifact(t, c, repo, "http://169.254.169.254/latest/meta-data/iam/x.tar.gz", "sha256:"+strings.Repeat("0", 64), "main@sha1:"+strings.Repeat("1", 40))

	hour := metav1.Duration{Duration: time.Hour}
	want := map[string]string{
		"git-loopback": "resolves to a loopback address, which legate does not fetch from",
		"oci-by-name":  "localhost resolves to a loopback address",
		"flux-meta":    "169.254.169.254 resolves to a link-local (where cloud metadata services answer) address",
	}
	for name, spec := range map[string]v1alpha1.EnvoySourceSpec{
		"git-loopback": {Git: &v1alpha1.GitSource{URL: internal.URL + "/team/envoy.git"}, Interval: hour},
		"oci-by-name":  {OCI: &v1alpha1.OCISource{URL: "oci://" + strings.Replace(host, "127.0.0.1", "localhost", 1) + "/team/envoy"}, Interval: hour},
		"flux-meta":    {SourceRef: &v1alpha1.FluxSourceRef{Kind: "GitRepository", Name: "metadata"}, Interval: hour},
	} {
		require.NoError(t, c.Create(ctx, &v1alpha1.EnvoySource{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: spec}))
	}
	for name, text := range want {
		var msg string
		require.Eventually(t, func() bool {
			ready := readyOf(getSource(t, c, client.ObjectKey{Namespace: "default", Name: name}))
			if ready == nil || ready.Status != metav1.ConditionFalse {
				return false
			}
			msg = ready.Message
			return strings.Contains(msg, text)
		}, 60*time.Second, 50*time.Millisecond, "%s: %s", name, msg)
		assert.Contains(t, msg, "--fetch-allow-networks", name)
		assert.NotContains(t, msg, "connection refused", name)
		assert.NotContains(t, msg, "i/o timeout", name)
	}
	assert.Zero(t, hits.Load(), "the internal server saw no request")
}
