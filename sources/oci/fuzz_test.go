package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"path"
	"strings"
	"testing"

	"github.com/legate-dev/legate/sources"
)

// tarOf writes entries (name, type, body) as a tar stream.
func tarOf(f *testing.F, entries ...tar.Header) []byte {
	f.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		body := strings.Repeat("x", int(h.Size))
		if err := tw.WriteHeader(&h); err != nil {
			f.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(body)); err != nil {
				f.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		f.Fatal(err)
	}
	return buf.Bytes()
}

func gzipOf(f *testing.F, data []byte) []byte {
	f.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		f.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		f.Fatal(err)
	}
	return buf.Bytes()
}

// onlyFilesAndDirs reads an accepted archive again and reports the first
// entry that is neither a regular file nor a directory.
func onlyFilesAndDirs(data []byte) (byte, bool) {
	var r io.Reader = bytes.NewReader(data)
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return 0, true
		}
		zr.Multistream(false)
		r = zr
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err != nil {
			return 0, true
		}
		switch h.Typeflag {
		case tar.TypeReg, tar.TypeRegA, tar.TypeDir: //nolint:staticcheck // as extract
		default:
			return h.Typeflag, false
		}
	}
}

// FuzzExtract feeds arbitrary bytes to the artifact extractor: it must
// never panic, and whatever it accepts stays within the limits, holds only
// clean relative names under the chosen directory, and no links.
func FuzzExtract(f *testing.F) {
	good := tarOf(f,
		tar.Header{Name: "envoy/", Typeflag: tar.TypeDir, Mode: 0o755},
		tar.Header{Name: "envoy/cluster.yaml", Typeflag: tar.TypeReg, Mode: 0o644, Size: 40},
		tar.Header{Name: "./envoy/nodes/edge/listener.yaml", Typeflag: tar.TypeReg, Mode: 0o644, Size: 12},
	)
	f.Add(good)
	f.Add(gzipOf(f, good))
	f.Add(good[:len(good)/2]) // truncated
	f.Add(tarOf(f, tar.Header{Name: "envoy/link.yaml", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}))
	f.Add(tarOf(f, tar.Header{Name: "envoy/hard.yaml", Typeflag: tar.TypeLink, Linkname: "envoy/cluster.yaml"}))
	f.Add(tarOf(f, tar.Header{Name: "../escape.yaml", Typeflag: tar.TypeReg, Size: 3}))
	f.Add(tarOf(f, tar.Header{Name: "/abs.yaml", Typeflag: tar.TypeReg, Size: 3}))
	f.Add(tarOf(f, tar.Header{Name: "envoy/fifo", Typeflag: tar.TypeFifo}))
	f.Add(tarOf(f, tar.Header{Name: "envoy/odd", Typeflag: 'Z', Size: 0}))
	f.Add(tarOf(f, tar.Header{Name: "envoy/big.yaml", Typeflag: tar.TypeReg, Size: 5000}))
	f.Add(gzipOf(f, bytes.Repeat([]byte{0}, 1<<16))) // a small gzip of zeros
	f.Add([]byte{0x1f, 0x8b})
	lim := Limits{Compressed: 64 << 10, Extracted: 4096, Files: 8}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, dir := range []string{".", "envoy"} {
			const kept = 2048 // under lim.Extracted: the budget binds first
			files, err := Extract(bytes.NewReader(data), dir, lim, sources.NewBudget(kept, kept).Fetch("fuzz"))
			if err != nil {
				if files != nil {
					t.Fatalf("files returned with an error: %v", err)
				}
				continue
			}
			if len(files) > lim.Files {
				t.Fatalf("%d files over the limit of %d", len(files), lim.Files)
			}
			var total int64
			for name, body := range files {
				total += int64(len(body))
				if name == "" || name == "." || path.IsAbs(name) || path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") {
					t.Fatalf("unclean name %q accepted", name)
				}
			}
			if total > kept {
				t.Fatalf("%d bytes kept over the budget of %d", total, kept)
			}
			for name := range files {
				if !sources.Kept(name) {
					t.Fatalf("%q kept: the renderer never reads it", name)
				}
			}
			if typ, ok := onlyFilesAndDirs(data); !ok {
				t.Fatalf("an archive with an entry of type %q was accepted", typ)
			}
		}
	})
}
