package main

import (
	"archive/tar"
	"context"
	"debug/elf"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The image make image builds is pushed to a real registry (in process),
// pulled back by tag as a cluster would, unpacked, and the legate in it
// runs and reports the version and commit it was labelled with. Only this
// machine's platform is built (the index of make image holds amd64 and
// arm64; one suffices to prove the assembly).
func TestImageRunsLegateVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds legate: not in -short")
	}
	reg := httptest.NewServer(registry.New())
	t.Cleanup(reg.Close)

	const version, commit = "v0.0.0-test", "0123456789abcdef0123456789abcdef01234567"
	idx, err := build(context.Background(), spec{
		Version: version, Commit: commit,
		Platforms: []string{runtime.GOOS + "/" + runtime.GOARCH},
		Module:    filepath.Join("..", ".."),
	})
	require.NoError(t, err)
	ref, err := name.ParseReference(strings.TrimPrefix(reg.URL, "http://") + "/legate-dev/legate:" + version)
	require.NoError(t, err)
	require.NoError(t, remote.WriteIndex(ref, idx))

	pulled, err := remote.Index(ref)
	require.NoError(t, err)
	manifest, err := pulled.IndexManifest()
	require.NoError(t, err)
	require.Len(t, manifest.Manifests, 1)
	desc := manifest.Manifests[0]
	require.NotNil(t, desc.Platform)
	assert.Equal(t, v1.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}, *desc.Platform)
	img, err := pulled.Image(desc.Digest)
	require.NoError(t, err)

	cfg, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, nonRoot, cfg.Config.User, "the image runs as a non-root user")
	assert.Equal(t, []string{"/usr/local/bin/legate"}, cfg.Config.Entrypoint)
	assert.Equal(t, version, cfg.Config.Labels["org.opencontainers.image.version"])
	assert.Equal(t, commit, cfg.Config.Labels["org.opencontainers.image.revision"])

	root := t.TempDir()
	unpack(t, img, root)
	assert.FileExists(t, filepath.Join(root, caBundle), "the image carries the CA certificates")
	exe := filepath.Join(root, "usr", "local", "bin", "legate")
	f, err := elf.Open(exe)
	require.NoError(t, err)
	libs, err := f.ImportedLibraries()
	require.NoError(t, f.Close())
	require.NoError(t, err)
	assert.Empty(t, libs, "legate is linked statically: the image has no libc")
	out, err := exec.Command(exe, "version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "legate "+version+" (commit "+commit+")")
}

// unpack writes the regular files of img's flattened filesystem below dir.
func unpack(t *testing.T, img v1.Image, dir string) {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err)
		if h.Typeflag != tar.TypeReg {
			continue
		}
		path := filepath.Join(dir, filepath.FromSlash(h.Name))
		require.True(t, strings.HasPrefix(path, dir+string(filepath.Separator)), "entry %q escapes the root", h.Name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)|0o200)
		require.NoError(t, err)
		_, err = io.Copy(f, io.LimitReader(tr, 512<<20))
		require.NoError(t, f.Close())
		require.NoError(t, err)
	}
}
