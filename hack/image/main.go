// Command image builds legate's container image without a Docker daemon:
// `go build` of cmd/legate for each platform (static, CGO off), one layer
// holding the binary and the system's CA certificates (Git and OCI sources
// fetch over HTTPS), run as a non-root user, labelled with the version and
// commit, and assembled into a multi-platform index with
// go-containerregistry. The index is written as an OCI image layout
// directory (-oci-layout) and/or pushed to a registry (-push).
//
//	go run ./hack/image -version v0.3.0 -commit $(git rev-parse HEAD) -oci-layout dist/image
//	go run ./hack/image -version v0.3.0 -commit … -push registry.example/legate:v0.3.0
//
// make image runs it with the Makefile's VERSION and COMMIT.
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// nonRoot is the user the image runs as: distroless' "nonroot", so that
// a Pod's runAsNonRoot check passes without a runAsUser.
const nonRoot = "65532:65532"

// caBundle is where Debian keeps the system's CA certificates; the image
// carries them at the same path, where Go's crypto/x509 looks first.
const caBundle = "/etc/ssl/certs/ca-certificates.crt"

// spec is what one image build takes.
type spec struct {
	Version, Commit string
	// Platforms are "os/arch" pairs, such as linux/amd64.
	Platforms []string
	// Module is the repository root (where go.mod is).
	Module string
	// Created is the image's creation time (the commit's, for
	// reproducible builds; zero: the epoch).
	Created time.Time
}

func main() {
	var (
		s         spec
		platforms string
		ociLayout string
		push      string
	)
	flag.StringVar(&s.Version, "version", "dev", "the version legate reports and the image is labelled with")
	flag.StringVar(&s.Commit, "commit", "unknown", "the commit legate was built from")
	flag.StringVar(&platforms, "platforms", "linux/amd64,linux/arm64", "comma-separated os/arch pairs")
	flag.StringVar(&ociLayout, "oci-layout", "", "write the image index to this directory as an OCI image layout")
	flag.StringVar(&push, "push", "", "push the image index to this reference (registry/repository:tag)")
	flag.Parse()
	if ociLayout == "" && push == "" {
		fail(errors.New("nothing to do: give -oci-layout DIR and/or -push REF"))
	}
	s.Platforms = strings.Split(platforms, ",")
	s.Module = "."
	idx, err := build(context.Background(), s)
	if err != nil {
		fail(err)
	}
	if ociLayout != "" {
		if err := writeLayout(ociLayout, idx); err != nil {
			fail(err)
		}
		fmt.Fprintln(os.Stdout, "wrote", ociLayout)
	}
	if push != "" {
		ref, err := name.ParseReference(push)
		if err != nil {
			fail(fmt.Errorf("-push %q: %w", push, err))
		}
		if err := remote.WriteIndex(ref, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			fail(fmt.Errorf("push %s: %w", ref, err))
		}
		digest, _ := idx.Digest()
		fmt.Fprintf(os.Stdout, "pushed %s@%s\n", ref, digest)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "image:", err)
	os.Exit(1)
}

// build compiles legate for every platform of s and assembles the index.
func build(ctx context.Context, s spec) (v1.ImageIndex, error) {
	if len(s.Platforms) == 0 {
		return nil, errors.New("no platform")
	}
	certs, err := os.ReadFile(caBundle)
	if err != nil {
		return nil, fmt.Errorf("the CA certificates the image carries: %w (apt-get install ca-certificates)", err)
	}
	tmp, err := os.MkdirTemp("", "legate-image-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()

	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range s.Platforms {
		goos, goarch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok || goos == "" || goarch == "" {
			return nil, fmt.Errorf("platform %q: want os/arch, such as linux/amd64", p)
		}
		bin := filepath.Join(tmp, goos+"-"+goarch, "legate")
		if err := compile(ctx, s, goos, goarch, bin); err != nil {
			return nil, err
		}
		img, err := image(s, goos, goarch, bin, certs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: goos, Architecture: goarch}},
		})
	}
	return mutate.Annotations(idx, labels(s)).(v1.ImageIndex), nil
}

// compile builds a static legate for goos/goarch into out.
func compile(ctx context.Context, s spec, goos, goarch, out string) error {
	ldflags := fmt.Sprintf("-s -w -X main.version=%s -X main.commit=%s", s.Version, s.Commit)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, "./cmd/legate")
	cmd.Dir = s.Module
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for %s/%s: %w", goos, goarch, err)
	}
	return nil
}

// image is one platform's image: the binary and the CA certificates in one
// layer, run as nonRoot with legate as its entrypoint.
func image(s spec, goos, goarch, bin string, certs []byte) (v1.Image, error) {
	exe, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{
		{"etc/ssl/certs/ca-certificates.crt", 0o444, certs},
		{"usr/local/bin/legate", 0o555, exe},
	} {
		if err := tw.WriteHeader(&tar.Header{
			Name: f.name, Mode: f.mode, Size: int64(len(f.data)), Typeflag: tar.TypeReg,
			ModTime: s.Created, Uid: 0, Gid: 0,
		}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = goos, goarch
	cfg.Created = v1.Time{Time: s.Created}
	cfg.Config.Entrypoint = []string{"/usr/local/bin/legate"}
	cfg.Config.User = nonRoot
	cfg.Config.WorkingDir = "/"
	cfg.Config.Env = []string{"SSL_CERT_FILE=" + caBundle}
	cfg.Config.Labels = labels(s)
	return mutate.ConfigFile(img, cfg)
}

// labels are the OCI annotations of the image and its index.
func labels(s spec) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    "legate",
		"org.opencontainers.image.source":   "https://github.com/legate-dev/legate",
		"org.opencontainers.image.version":  s.Version,
		"org.opencontainers.image.revision": s.Commit,
	}
}

// writeLayout writes idx as an OCI image layout under dir (replacing what
// was there).
func writeLayout(dir string, idx v1.ImageIndex) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if _, err := layout.Write(dir, idx); err != nil {
		return fmt.Errorf("write the OCI layout %s: %w", dir, err)
	}
	return nil
}
