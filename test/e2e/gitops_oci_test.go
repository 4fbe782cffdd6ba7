package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"log"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/revisions"
	ocisource "github.com/legate-dev/legate/sources/oci"
	"github.com/legate-dev/legate/statuspage"
)

// TestGitOpsOCIArtifact pushes an artifact the way `flux push artifact`
// does (Flux's config and content media types, a tar+gzip layer, the
// source revision in the org.opencontainers.image.revision annotation) to
// an in-process registry, and checks that legate serves it to grpc-go and
// records the commit it was built from.
func TestGitOpsOCIArtifact(t *testing.T) {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")
	a := startBackend(t, "a")

	const commit = "0123456789abcdef0123456789abcdef01234567"
	digest := pushFluxArtifact(t, host+"/envoy/config:v1.0.0", "main@sha1:"+commit, gitopsConfig{route: "a", portA: a.Port, portB: a.Port}.files())

	legate := startGitopsLegate(t,
		"--state-dir", t.TempDir(),
		"--source", "name=artifact,oci=oci://"+host+"/envoy/config,semver=>=1.0.0,insecure=true,path=envoy,interval=1h",
	)
	client := newGitopsClient(t, legate.xdsAddr)
	client.lands("a", "the artifact's configuration routes to a")

	var view statuspage.NodeView
	require.Eventually(t, func() bool {
		for _, v := range legate.nodes() {
			if v.NodeID == gitopsNode && v.State == revisions.StateInSync {
				view = v
				return true
			}
		}
		return false
	}, gitopsWait, gitopsPoll, "GET /api/v1/nodes lists the node in sync")
	require.NotNil(t, view.Published)
	assert.Equal(t, commit, view.Published.Commit, "the commit from the revision annotation is recorded")
	assert.Equal(t, "v1.0.0@"+digest, view.Published.Revision, "the revision names the tag and the manifest digest")
	require.NotEmpty(t, view.History)
	assert.Equal(t, commit, view.History[0].Commit)
	assert.Equal(t, "artifact", view.Published.Source)
}

// pushFluxArtifact writes files as a Flux artifact to ref and returns the
// manifest digest.
func pushFluxArtifact(t *testing.T, ref, revision string, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(files[n]))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())

	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, ocisource.FluxConfigMediaType)
	img, err := mutate.Append(img, mutate.Addendum{
		Layer:     static.NewLayer(buf.Bytes(), ocisource.FluxContentMediaType),
		MediaType: ocisource.FluxContentMediaType,
	})
	require.NoError(t, err)
	img = mutate.Annotations(img, map[string]string{
		ocisource.RevisionAnnotation: revision,
		ocisource.SourceAnnotation:   "https://git.example/org/envoy-config.git",
	}).(v1.Image)
	tag, err := name.NewTag(ref, name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Write(tag, img))
	d, err := img.Digest()
	require.NoError(t, err)
	return d.String()
}
