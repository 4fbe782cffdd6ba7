package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/sources"
)

func TestExtractRejectsUnsafeArchives(t *testing.T) {
	lim := Limits{Compressed: 1 << 20, Extracted: 1 << 20, Files: 3}
	bomb := func() []byte {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		w := tar.NewWriter(zw)
		require.NoError(t, w.WriteHeader(&tar.Header{Name: "zeros", Typeflag: tar.TypeReg, Size: 64 << 20, Mode: 0o644}))
		_, err := w.Write(make([]byte, 64<<20))
		require.NoError(t, err)
		require.NoError(t, w.Close())
		require.NoError(t, zw.Close())
		return buf.Bytes()
	}
	tests := []struct {
		name    string
		archive []byte
		lim     Limits
		wantErr string
	}{
		{"parent path", tarball(t, true, entry{name: "a/../../x", body: "x"}), lim, "leaves the archive root"},
		{"absolute path", tarball(t, false, entry{name: "/etc/passwd", body: "x"}), lim, "absolute"},
		{"symlink", tarball(t, true, entry{name: "l", typeflag: tar.TypeSymlink, linkname: "/etc/passwd"}), lim, `"l" is a link`},
		{"hardlink", tarball(t, true, entry{name: "h", typeflag: tar.TypeLink, linkname: "a"}), lim, `"h" is a link`},
		{"char device", tarball(t, true, entry{name: "d", typeflag: tar.TypeChar}), lim, "device"},
		{"fifo", tarball(t, true, entry{name: "p", typeflag: tar.TypeFifo}), lim, "device or FIFO"},
		{"too many files", tarball(t, true, entry{name: "1", body: "1"}, entry{name: "2", body: "2"}, entry{name: "3", body: "3"}, entry{name: "4", body: "4"}), lim, "more than 3 files"},
		{"decompression bomb", bomb(), lim, "unpacks to more than 1048576 bytes"},
		{"compressed size", tarball(t, false, entry{name: "big", body: string(make([]byte, 4096))}), Limits{Compressed: 1024, Extracted: 1 << 20, Files: 3}, "larger than 1024 bytes"},
		{"duplicate", tarball(t, true, entry{name: "a", body: "1"}, entry{name: "./a", body: "2"}), lim, "twice"},
		{"not a tar", []byte("this is not an archive at all, just text......................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................"), lim, "read archive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Extract(bytes.NewReader(tt.archive), ".", tt.lim, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestExtractKeepsFilesUnderPath(t *testing.T) {
	archive := tarball(t, true,
		entry{name: "envoy/", typeflag: tar.TypeDir},
		entry{name: "envoy/a.yaml", body: "a"},
		entry{name: "./envoy/sub/b.yaml", body: "b"},
		entry{name: "envoy2/c.yaml", body: "c"},
		entry{name: "top.yaml", body: "t"},
	)
	files, err := Extract(bytes.NewReader(archive), "envoy", Limits{Compressed: 1 << 20, Extracted: 1 << 20, Files: 10}, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"a.yaml": []byte("a"), "sub/b.yaml": []byte("b")}, files)
}

// Only the files the renderer reads are kept; the rest are read past and
// still counted by the limits. Kept files are counted against the charge.
func TestExtractKeepsWhatTheRendererReads(t *testing.T) {
	archive := tarball(t, true,
		entry{name: "envoy/a.yaml", body: "a"},
		entry{name: "envoy/README.md", body: "docs"},
		entry{name: "envoy/blob.bin", body: string(make([]byte, 4096))},
		entry{name: "envoy/p.cue", body: "package p"},
	)
	budget := sources.NewBudget(1<<10, 1<<10)
	charge := budget.Fetch("s")
	files, err := Extract(bytes.NewReader(archive), "envoy", Limits{Compressed: 1 << 20, Extracted: 1 << 20, Files: 10}, charge)
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"a.yaml": []byte("a"), "p.cue": []byte("package p")}, files)
	charge.Keep()
	mine, _ := budget.Held("s")
	assert.EqualValues(t, 1+len("package p"), mine)

	_, err = Extract(bytes.NewReader(archive), "envoy", Limits{Compressed: 1 << 20, Extracted: 4096, Files: 10}, nil)
	assert.ErrorContains(t, err, "unpacks to more than 4096 bytes", "what is not kept is still counted")

	big := tarball(t, true, entry{name: "envoy/big.yaml", body: string(make([]byte, 2048))})
	_, err = Extract(bytes.NewReader(big), "envoy", Limits{Compressed: 1 << 20, Extracted: 1 << 20, Files: 10}, budget.Fetch("t"))
	var le *sources.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "envoy/big.yaml", le.File)
}
