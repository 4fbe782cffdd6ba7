package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/require"
)

type entry struct {
	name     string
	body     string
	typeflag byte
	linkname string
}

func tarball(t testing.TB, gz bool, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w *tar.Writer
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&buf)
		w = tar.NewWriter(zw)
	} else {
		w = tar.NewWriter(&buf)
	}
	for _, e := range entries {
		tf := e.typeflag
		if tf == 0 {
			tf = tar.TypeReg
		}
		hdr := &tar.Header{Name: e.name, Typeflag: tf, Linkname: e.linkname, Mode: 0o644}
		if tf == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		if tf == tar.TypeDir {
			hdr.Mode = 0o755
		}
		require.NoError(t, w.WriteHeader(hdr))
		if tf == tar.TypeReg {
			_, err := w.Write([]byte(e.body))
			require.NoError(t, err)
		}
	}
	require.NoError(t, w.Close())
	if zw != nil {
		require.NoError(t, zw.Close())
	}
	return buf.Bytes()
}

// testRegistry is go-containerregistry's in-process registry, optionally
// behind basic auth, counting blob downloads.
type testRegistry struct {
	host       string
	user, pass string
	blobReads  atomic.Int64
}

func startRegistry(t testing.TB, user, pass string) *testRegistry {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r := &testRegistry{user: user, pass: pass}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if user != "" {
			u, p, ok := req.BasicAuth()
			if !ok || u != user || p != pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/") {
			r.blobReads.Add(1)
		}
		reg.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

type artifact struct {
	layer       []byte
	layerType   types.MediaType
	configType  types.MediaType
	annotations map[string]string
}

// fluxArtifact is shaped like `flux push artifact` output.
func fluxArtifact(t testing.TB, revision string, entries ...entry) artifact {
	return artifact{
		layer:       tarball(t, true, entries...),
		layerType:   FluxContentMediaType,
		configType:  FluxConfigMediaType,
		annotations: map[string]string{RevisionAnnotation: revision, SourceAnnotation: "https://git.example/org/cfg.git"},
	}
}

// push writes the artifact under every tag and returns its digest.
func (r *testRegistry) push(t testing.TB, repo string, a artifact, tags ...string) string {
	t.Helper()
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, a.configType)
	img, err := mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(a.layer, a.layerType), MediaType: a.layerType})
	require.NoError(t, err)
	if a.annotations != nil {
		img = mutate.Annotations(img, a.annotations).(v1.Image)
	}
	for _, tag := range tags {
		ref, err := name.NewTag(r.host+"/"+repo+":"+tag, name.Insecure)
		require.NoError(t, err)
		require.NoError(t, remote.Write(ref, img, remote.WithAuth(r.auth())))
	}
	d, err := img.Digest()
	require.NoError(t, err)
	return d.String()
}

func (r *testRegistry) auth() authn.Authenticator {
	if r.user == "" {
		return authn.Anonymous
	}
	return &authn.Basic{Username: r.user, Password: r.pass}
}
