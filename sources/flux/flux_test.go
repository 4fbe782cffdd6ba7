package flux_test

import (
	"archive/tar"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/legate-dev/legate/sources"
	"github.com/legate-dev/legate/sources/flux"
	"github.com/legate-dev/legate/sources/oci"
)

func tarball(t *testing.T, files ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for i := 0; i < len(files); i += 2 {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: files[i], Mode: 0o644, Size: int64(len(files[i+1])), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(files[i+1]))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// fixture is a Flux object whose artifact an httptest server serves.
type fixture struct {
	t      testing.TB
	reader client.Client
	obj    *unstructured.Unstructured
	blobs  map[string][]byte
	gets   int
	srv    *httptest.Server
}

func newFixture(t testing.TB, kind string) *fixture {
	f := &fixture{t: t, blobs: map[string][]byte{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.gets++
		b, ok := f.blobs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(f.srv.Close)
	f.obj = &unstructured.Unstructured{}
	f.obj.SetGroupVersionKind(flux.GroupVersion.WithKind(kind))
	f.obj.SetNamespace("team-a")
	f.obj.SetName("envoy")
	require.NoError(t, unstructured.SetNestedField(f.obj.Object, "https://user:pass@git.example/team/envoy", "spec", "url"))
	// A scheme of its own: the fake client adds the unstructured Flux
	// kinds to its scheme, and client-go's shared one would race between
	// the package's parallel tests.
	f.reader = fake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithObjects(f.obj).Build()
	return f
}

// publish serves blob at path and sets status.artifact to claim digest.
func (f *fixture) publish(path string, blob []byte, digest, revision string, metadata map[string]any) {
	f.t.Helper()
	f.blobs[path] = blob
	art := map[string]any{"url": f.srv.URL + path, "digest": digest, "revision": revision}
	if metadata != nil {
		art["metadata"] = metadata
	}
	ctx := context.Background()
	require.NoError(f.t, f.reader.Get(ctx, client.ObjectKeyFromObject(f.obj), f.obj))
	require.NoError(f.t, unstructured.SetNestedMap(f.obj.Object, art, "status", "artifact"))
	require.NoError(f.t, f.reader.Update(ctx, f.obj))
}

func (f *fixture) source(path string, lim oci.Limits) *flux.Source {
	f.t.Helper()
	src, err := flux.New(flux.Config{
		Name: "envoysource/team-a/cfg", Reader: f.reader, Kind: f.obj.GetKind(),
		Key: types.NamespacedName{Namespace: "team-a", Name: "envoy"}, Path: path, Limits: lim,
	})
	require.NoError(f.t, err)
	return src
}

func TestGitRepositoryArtifact(t *testing.T) {
	t.Parallel()
	f := newFixture(t, flux.KindGitRepository)
	src := f.source("./envoy", oci.Limits{})
	ctx := context.Background()

	_, err := src.Fetch(ctx)
	assert.ErrorContains(t, err, "GitRepository team-a/envoy has no artifact yet")

	sha := strings.Repeat("a", 40)
	blob := tarball(t, "envoy/edge.yaml", "a: 1\n", "README.md", "outside the path\n")
	f.publish("/a.tar.gz", blob, digestOf(blob), "main@sha1:"+sha, nil)
	res, err := src.Fetch(ctx)
	require.NoError(t, err)
	assert.True(t, res.Changed)
	assert.Equal(t, sources.Origin{
		Kind: sources.KindGit, Source: "envoysource/team-a/cfg", URL: "https://git.example/team/envoy",
		Ref: "main", Commit: sha, Path: "envoy", Digest: digestOf(blob), Message: "artifact of GitRepository team-a/envoy",
	}, res.Origin, "credentials in the URL are never shown")
	assert.Equal(t, "main@sha1:"+sha, res.Origin.Revision())
	data, err := res.Files.(*sources.Tree).ReadFile("edge.yaml")
	require.NoError(t, err)
	assert.Equal(t, "a: 1\n", string(data))
	_, err = res.Files.(*sources.Tree).ReadFile("README.md")
	assert.Error(t, err, "files outside the path are not read")

	gets := f.gets
	again, err := src.Fetch(ctx)
	require.NoError(t, err)
	assert.False(t, again.Changed)
	assert.Equal(t, gets, f.gets, "a verified artifact is not downloaded again")

	// A new commit that changes nothing under the path: a new origin,
	// the same content.
	sha2 := strings.Repeat("b", 40)
	blob2 := tarball(t, "envoy/edge.yaml", "a: 1\n", "README.md", "edited\n")
	f.publish("/b.tar.gz", blob2, digestOf(blob2), "main@sha1:"+sha2, nil)
	res2, err := src.Fetch(ctx)
	require.NoError(t, err)
	assert.False(t, res2.Changed, "nothing changed under the path")
	assert.Equal(t, res.Content, res2.Content)
	assert.Equal(t, sha2, res2.Origin.Commit)

	// Tampered: the bytes are not what the digest says.
	sha3 := strings.Repeat("c", 40)
	blob3 := tarball(t, "envoy/edge.yaml", "a: 2\n")
	f.publish("/c.tar.gz", blob3, digestOf(blob2), "main@sha1:"+sha3, nil)
	_, err = src.Fetch(ctx)
	require.ErrorIs(t, err, flux.ErrDigestMismatch)
	assert.ErrorContains(t, err, "GitRepository says "+digestOf(blob2))
	assert.ErrorContains(t, err, "the download from "+f.srv.URL+"/c.tar.gz is "+digestOf(blob3))

	// After a refusal the last verified artifact is still what a fetch
	// that cannot verify anything new would keep: the next good one is
	// read in full.
	blob4 := tarball(t, "envoy/edge.yaml", "a: 3\n")
	f.publish("/d.tar.gz", blob4, digestOf(blob4), "main@sha1:"+strings.Repeat("d", 40), nil)
	res4, err := src.Fetch(ctx)
	require.NoError(t, err)
	assert.True(t, res4.Changed)
}

func TestOCIRepositoryArtifact(t *testing.T) {
	t.Parallel()
	f := newFixture(t, flux.KindOCIRepository)
	src := f.source("", oci.Limits{})
	blob := tarball(t, "edge.yaml", "a: 1\n")
	manifest := "sha256:" + strings.Repeat("e", 64)
	sha := strings.Repeat("f", 40)
	f.publish("/o.tar.gz", blob, digestOf(blob), "latest@"+manifest, map[string]any{oci.RevisionAnnotation: "main@sha1:" + sha})
	res, err := src.Fetch(context.Background())
	require.NoError(t, err)
	assert.Equal(t, sources.KindOCI, res.Origin.Kind)
	assert.Equal(t, "latest", res.Origin.Ref)
	assert.Equal(t, manifest, res.Origin.Digest, "the OCI manifest digest of the revision")
	assert.Equal(t, sha, res.Origin.Commit, "the commit the artifact was built from")
}

// What a Flux object's status may say that legate refuses to download or
// unpack, each named.
func TestArtifactsRefused(t *testing.T) {
	t.Parallel()
	blob := tarball(t, "envoy/edge.yaml", strings.Repeat("x", 4096))
	for _, tc := range []struct {
		name, url, digest, path string
		lim                     oci.Limits
		want                    string
	}{
		{name: "not http", url: "file:///etc/passwd", digest: digestOf(blob), want: `status.artifact.url "file:///etc/passwd" is not an http(s) URL`},
		{name: "no digest", digest: "", want: "status.artifact.digest is empty"},
		{name: "other algorithm", digest: "md5:abc", want: `digest algorithm "md5" is not supported`},
		{name: "not a digest", digest: "abc", want: `"abc" is not ALGORITHM:HEX`},
		{name: "missing", url: "/absent.tar.gz", digest: digestOf(blob), want: "404 Not Found"},
		{name: "unparsable with password", url: "http://bob:hunter2pw@source-controller.example/%zz.tar.gz", digest: digestOf(blob), want: "invalid URL escape"},
		{name: "too large", digest: digestOf(blob), lim: oci.Limits{Compressed: 64}, want: "larger than 64 bytes"},
		{name: "unpacks too large", digest: digestOf(blob), lim: oci.Limits{Extracted: 1024}, want: "unpacks to more than 1024 bytes"},
		{name: "no files under path", digest: digestOf(blob), path: "other", want: `no files under path "other"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, flux.KindGitRepository)
			f.publish("/a.tar.gz", blob, tc.digest, "main@sha1:"+strings.Repeat("a", 40), nil)
			if tc.url != "" {
				require.NoError(t, unstructured.SetNestedField(f.obj.Object, strings.Replace(tc.url, "/absent", f.srv.URL+"/absent", 1), "status", "artifact", "url"))
				require.NoError(t, f.reader.Update(context.Background(), f.obj))
			}
			_, err := f.source(cmp.Or(tc.path, "envoy"), tc.lim).Fetch(context.Background())
			assert.ErrorContains(t, err, tc.want)
			assert.NotContains(t, err.Error(), "hunter2pw", "a password in the URL is never quoted")
		})
	}
	_, err := flux.New(flux.Config{Name: "x", Kind: "Bucket", Reader: fake.NewClientBuilder().WithScheme(runtime.NewScheme()).Build(), Key: types.NamespacedName{Name: "b"}})
	assert.ErrorContains(t, err, `kind "Bucket" is not GitRepository or OCIRepository`)
}
