package oci

import (
	"context"
	"encoding/base64"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/sources"
)

const sha1 = "0123456789abcdef0123456789abcdef01234567"

func readAll(t *testing.T, fsys fs.FS) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		out[p] = string(b)
		return err
	}))
	return out
}

func newSource(t *testing.T, cfg Config) *Source {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "art"
	}
	cfg.Insecure = true
	s, err := New(cfg)
	require.NoError(t, err)
	return s
}

func TestFetchFluxArtifact(t *testing.T) {
	reg := startRegistry(t, "", "")
	digest := reg.push(t, "cfg/edge", fluxArtifact(t, "main@sha1:"+sha1,
		entry{name: "./", typeflag: '5'},
		entry{name: "envoy/", typeflag: '5'},
		entry{name: "envoy/listeners.yaml", body: "listeners: 1"},
		entry{name: "README.md", body: "hi"},
	), "latest")

	src := newSource(t, Config{URL: "oci://" + reg.host + "/cfg/edge", Path: "envoy"})
	res, err := src.Fetch(context.Background())
	require.NoError(t, err)
	assert.True(t, res.Changed)
	assert.Equal(t, map[string]string{"listeners.yaml": "listeners: 1"}, readAll(t, res.Files))
	assert.Equal(t, sources.Origin{
		Kind: sources.KindOCI, Source: "art", URL: "oci://" + reg.host + "/cfg/edge", Ref: "latest", Path: "envoy",
		Digest: digest, Commit: sha1, Message: "built from https://git.example/org/cfg.git",
	}, res.Origin)
	assert.Equal(t, "latest@"+digest, res.Origin.Revision())
	reads := reg.blobReads.Load()

	res, err = src.Fetch(context.Background())
	require.NoError(t, err)
	assert.False(t, res.Changed)
	assert.Equal(t, reads, reg.blobReads.Load(), "an unchanged digest downloads nothing")

	digest2 := reg.push(t, "cfg/edge", fluxArtifact(t, sha1, entry{name: "envoy/listeners.yaml", body: "listeners: 2"}), "latest")
	res, err = src.Fetch(context.Background())
	require.NoError(t, err)
	assert.True(t, res.Changed)
	assert.Equal(t, digest2, res.Origin.Digest)
	assert.Equal(t, sha1, res.Origin.Commit, "a bare SHA annotation is read too")
	assert.Equal(t, "listeners: 2", readAll(t, res.Files)["listeners.yaml"])
}

func TestFetchRefs(t *testing.T) {
	reg := startRegistry(t, "", "")
	push := func(body string, tags ...string) string {
		return reg.push(t, "cfg", fluxArtifact(t, "", entry{name: "v.yaml", body: body}), tags...)
	}
	d1 := push("1.0.0", "1.0.0")
	d12 := push("1.2.0", "v1.2.0")
	d2 := push("2.0.0", "2.0.0", "latest")
	push("other", "not-a-version")

	tests := []struct {
		name     string
		ref      Ref
		body     string
		revision string
	}{
		{"default latest", Ref{}, "2.0.0", "latest@" + d2},
		{"tag", Ref{Tag: "1.0.0"}, "1.0.0", "1.0.0@" + d1},
		{"semver", Ref{SemVer: "^1", Tag: "2.0.0"}, "1.2.0", "v1.2.0@" + d12},
		{"digest", Ref{Digest: d1, SemVer: ">=0"}, "1.0.0", d1}, // Flux form of a pinned digest
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := newSource(t, Config{URL: "oci://" + reg.host + "/cfg", Ref: tt.ref}).Fetch(context.Background())
			require.NoError(t, err)
			assert.Equal(t, tt.body, readAll(t, res.Files)["v.yaml"])
			assert.Equal(t, tt.revision, res.Origin.Revision())
			assert.Empty(t, res.Origin.Commit)
		})
	}
	_, err := newSource(t, Config{URL: "oci://" + reg.host + "/cfg", Ref: Ref{SemVer: ">=3"}}).Fetch(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `no tag matches semver range ">=3"`)
}

func TestFetchPlainTarLayer(t *testing.T) {
	reg := startRegistry(t, "", "")
	for _, gz := range []bool{false, true} {
		mt := "application/vnd.oci.image.layer.v1.tar"
		if gz {
			mt += "+gzip"
		}
		reg.push(t, "plain", artifact{
			layer:       tarball(t, gz, entry{name: "a.yaml", body: "a"}),
			layerType:   "application/vnd.oci.image.layer.v1.tar",
			configType:  "application/vnd.oci.image.config.v1+json",
			annotations: map[string]string{RevisionAnnotation: "sha1:" + sha1},
		}, "latest")
		res, err := newSource(t, Config{URL: "oci://" + reg.host + "/plain"}).Fetch(context.Background())
		require.NoError(t, err, mt)
		assert.Equal(t, map[string]string{"a.yaml": "a"}, readAll(t, res.Files), mt)
		assert.Equal(t, sha1, res.Origin.Commit)
	}
}

func TestFetchWithDockerConfigAuth(t *testing.T) {
	const pass = "reg-Pass-0123456789"
	reg := startRegistry(t, "robot", pass)
	reg.push(t, "private", fluxArtifact(t, "", entry{name: "a.yaml", body: "a"}), "latest")
	writeConfig := func(user, pw string) string {
		p := filepath.Join(t.TempDir(), "config.json")
		auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pw))
		require.NoError(t, os.WriteFile(p, []byte(`{"auths":{"http://`+reg.host+`/":{"auth":"`+auth+`"}}}`), 0o600))
		return p
	}
	url := "oci://" + reg.host + "/private"

	res, err := newSource(t, Config{URL: url, DockerConfig: writeConfig("robot", pass)}).Fetch(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "a", readAll(t, res.Files)["a.yaml"])

	for name, cfg := range map[string]string{"anonymous": "", "wrong password": writeConfig("robot", pass+"x")} {
		_, err = newSource(t, Config{URL: url, DockerConfig: cfg}).Fetch(context.Background())
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "401 Unauthorized", name)
		assert.NotContains(t, err.Error(), pass, name)
		assert.NotContains(t, err.Error(), base64.StdEncoding.EncodeToString([]byte("robot:"+pass+"x")), name)
	}
	_, err = newSource(t, Config{URL: url, DockerConfig: "/nonexistent/config.json"}).Fetch(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/nonexistent/config.json")
}

func TestFetchRejectsUnsafeArtifact(t *testing.T) {
	reg := startRegistry(t, "", "")
	reg.push(t, "evil", fluxArtifact(t, "", entry{name: "../../etc/passwd", body: "x"}), "latest")
	_, err := newSource(t, Config{URL: "oci://" + reg.host + "/evil"}).Fetch(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `archive entry "../../etc/passwd" leaves the archive root`)

	reg.push(t, "multi", artifact{layer: []byte("x"), layerType: "application/octet-stream", configType: FluxConfigMediaType}, "latest")
	_, err = newSource(t, Config{URL: "oci://" + reg.host + "/multi"}).Fetch(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no layer of media type "+FluxContentMediaType)
}

func TestNewRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"https://r/x", "oci://r/x:tag", "oci://r/x@sha256:abc", "oci://"} {
		_, err := New(Config{Name: "x", URL: u})
		assert.Error(t, err, u)
	}
}

// An OCI URL with a password is refused naming what to do instead, and
// no error quotes the password: config errors reach logs and statuses.
func TestBadURLErrorsCarryNoCredentials(t *testing.T) {
	for _, u := range []string{
		"oci://bob:hunter2pw@registry.example/cfg",
		"oci://bob:hunter2pw@registry.example/cfg:v1",
		"https://bob:hunter2pw@registry.example/cfg",
		"oci://bob:hunter2pw@registry.example/UPPER",
	} {
		_, err := New(Config{Name: "x", URL: u})
		require.Error(t, err, u)
		assert.NotContains(t, err.Error(), "hunter2pw", u)
		assert.Contains(t, err.Error(), `oci source "x"`, u)
	}
	_, err := New(Config{Name: "x", URL: "oci://bob:hunter2pw@registry.example/cfg"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "must not carry credentials")
}
