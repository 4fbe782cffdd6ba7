package flux_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/legate-dev/legate/sources/flux"
	"github.com/legate-dev/legate/sources/oci"
)

// An artifact is the same only when its URL, revision and digest all are:
// Flux may publish new bytes under the URL and revision it used before
// (a re-pushed tag, a storage rewrite), and legate verifies them again.
func TestArtifactRepublishedUnderTheSameURLAndRevisionIsVerifiedAgain(t *testing.T) {
	t.Parallel()
	f := newFixture(t, flux.KindGitRepository)
	src := f.source("envoy", oci.Limits{})
	ctx := context.Background()
	revision := "main@sha1:" + strings.Repeat("a", 40)

	first := tarball(t, "envoy/edge.yaml", "a: 1\n")
	f.publish("/a.tar.gz", first, digestOf(first), revision, nil)
	res, err := src.Fetch(ctx)
	require.NoError(t, err)
	gets := f.gets

	// The same URL and revision, new bytes and the digest that says so.
	second := tarball(t, "envoy/edge.yaml", "a: 2\n")
	f.publish("/a.tar.gz", second, digestOf(second), revision, nil)
	res2, err := src.Fetch(ctx)
	require.NoError(t, err)
	assert.Equal(t, gets+1, f.gets, "a new digest is downloaded again")
	assert.True(t, res2.Changed)
	assert.NotEqual(t, res.Content, res2.Content)
	assert.Equal(t, digestOf(second), res2.Origin.Digest)

	// The same URL and revision, a digest the bytes do not match: refused,
	// not served as the artifact verified before.
	third := tarball(t, "envoy/edge.yaml", "a: 3\n")
	f.publish("/a.tar.gz", third, digestOf(first), revision, nil)
	_, err = src.Fetch(ctx)
	require.ErrorIs(t, err, flux.ErrDigestMismatch)
	assert.Equal(t, gets+2, f.gets)
}

// What the controller gets: it passes no limits, so an artifact may read
// up to 64 MiB from the network and not a byte more.
func TestDefaultCompressedLimitIs64MiB(t *testing.T) {
	t.Parallel()
	const limit = 64 << 20
	require.Equal(t, limit, flux.DefaultMaxArtifactSize)
	head := tarball(t, "envoy/edge.yaml", "a: 1\n")
	for _, tc := range []struct {
		size int64
		want string
	}{
		{size: limit},
		{size: limit + 1, want: "artifact layer is larger than " + strconv.Itoa(limit) + " bytes"},
	} {
		t.Run(strconv.FormatInt(tc.size, 10), func(t *testing.T) {
			f := newFixture(t, flux.KindGitRepository)
			// The tarball, then zeros after its gzip stream up to size: read
			// (and hashed) to the end, never unpacked, never held.
			padded := func(w io.Writer) {
				_, _ = w.Write(head)
				_, _ = io.CopyN(w, zeros{}, tc.size-int64(len(head)))
			}
			h := sha256.New()
			padded(h)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { padded(w) }))
			t.Cleanup(srv.Close)
			f.publish("/big.tar.gz", nil, "sha256:"+hex.EncodeToString(h.Sum(nil)), "main@sha1:"+strings.Repeat("a", 40), nil)
			require.NoError(t, unstructured.SetNestedField(f.obj.Object, srv.URL+"/big.tar.gz", "status", "artifact", "url"))
			require.NoError(t, f.reader.Update(context.Background(), f.obj))

			res, err := f.source("envoy", oci.Limits{}).Fetch(context.Background())
			if tc.want != "" {
				assert.ErrorContains(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			assert.True(t, res.Changed)
		})
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// An object without an artifact is reported with the message of its
// Ready condition, when it has one: why Flux has not produced it.
func TestNoArtifactSaysWhyFluxHasNone(t *testing.T) {
	t.Parallel()
	f := newFixture(t, flux.KindGitRepository)
	src := f.source("envoy", oci.Limits{})
	_, err := src.Fetch(context.Background())
	require.EqualError(t, err, "GitRepository team-a/envoy has no artifact yet")

	require.NoError(t, unstructured.SetNestedSlice(f.obj.Object, []any{
		"not a condition",
		map[string]any{"type": "Reconciling", "status": "True", "message": "building artifact"},
		map[string]any{"type": "Ready", "status": "False", "message": "failed to checkout and determine revision: authentication required"},
	}, "status", "conditions"))
	require.NoError(t, f.reader.Update(context.Background(), f.obj))
	_, err = src.Fetch(context.Background())
	require.EqualError(t, err, "GitRepository team-a/envoy has no artifact yet (Ready: failed to checkout and determine revision: authentication required)")
}
