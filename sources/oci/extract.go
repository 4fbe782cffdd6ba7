package oci

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/legate-dev/legate/sources"
)

// Limits bound what one archive may unpack to.
type Limits struct {
	Compressed int64 // bytes read from the stream
	Extracted  int64 // bytes of all regular files
	Files      int
}

// Extract unpacks a tar or tar+gzip stream (detected by its magic bytes),
// keeping in memory the regular files under dir ("." for all), relative to
// it, that the renderer reads (sources.Kept); every other entry is read
// past without being held. Each kept file is counted against charge before
// it is read (nil counts nothing). It rejects, naming the entry: absolute
// paths and paths with ".." elements, symbolic and hard links, devices and
// FIFOs, and archives over the limits (which count every entry, kept or
// not). The stream is read to its end so that the caller's digest check
// sees every byte.
func Extract(r io.Reader, dir string, lim Limits, charge *sources.Charge) (map[string][]byte, error) {
	counted := &limitedReader{r: r, left: lim.Compressed}
	br := bufio.NewReader(counted)
	var tr *tar.Reader
	var gz *gzip.Reader
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		var err error
		if gz, err = gzip.NewReader(br); err != nil {
			return nil, fmt.Errorf("open gzip stream: %w", err)
		}
		gz.Multistream(false)
		tr = tar.NewReader(gz)
	} else {
		tr = tar.NewReader(br)
	}
	files := map[string][]byte{}
	seen := map[string]bool{}
	var total int64
	var count int
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, wrapLimit(counted, lim, fmt.Errorf("read archive: %w", err))
		}
		name, err := entryName(hdr.Name)
		if err != nil {
			return nil, err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			continue
		case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // TypeRegA is still written by old tools
		case tar.TypeSymlink, tar.TypeLink:
			return nil, fmt.Errorf("archive entry %q is a link (to %q): links are not allowed in an artifact", hdr.Name, hdr.Linkname)
		case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
			return nil, fmt.Errorf("archive entry %q is a device or FIFO: only regular files are allowed in an artifact", hdr.Name)
		default:
			return nil, fmt.Errorf("archive entry %q has unsupported type %q", hdr.Name, hdr.Typeflag)
		}
		count++
		if count > lim.Files {
			return nil, fmt.Errorf("archive has more than %d files, the limit", lim.Files)
		}
		if hdr.Size < 0 || hdr.Size > lim.Extracted-total {
			return nil, fmt.Errorf("archive unpacks to more than %d bytes, the limit (at entry %q): raise the extracted size limit if this artifact is legitimate", lim.Extracted, hdr.Name)
		}
		total += hdr.Size
		rel, ok := under(name, dir)
		if !ok {
			continue // tr.Next reads past it
		}
		if seen[rel] {
			return nil, fmt.Errorf("archive has entry %q twice", hdr.Name)
		}
		seen[rel] = true
		if !sources.Kept(rel) {
			continue
		}
		if charge != nil {
			if err := charge.Add(name, hdr.Size); err != nil {
				return nil, err
			}
		}
		data := make([]byte, hdr.Size)
		if _, err := io.ReadFull(tr, data); err != nil {
			return nil, wrapLimit(counted, lim, fmt.Errorf("read archive entry %q: %w", hdr.Name, err))
		}
		files[rel] = data
	}
	if gz != nil {
		if _, err := io.Copy(io.Discard, gz); err != nil {
			return nil, wrapLimit(counted, lim, fmt.Errorf("read archive: %w", err))
		}
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		return nil, wrapLimit(counted, lim, fmt.Errorf("read archive: %w", err))
	}
	return files, nil
}

// entryName cleans a tar entry name, rejecting names that leave the root.
func entryName(raw string) (string, error) {
	n := strings.TrimPrefix(raw, "./")
	if strings.HasPrefix(n, "/") || strings.Contains(n, "\\") {
		return "", fmt.Errorf("archive entry %q has an absolute or non-slash path", raw)
	}
	for _, elem := range strings.Split(n, "/") {
		if elem == ".." {
			return "", fmt.Errorf("archive entry %q leaves the archive root", raw)
		}
	}
	n = path.Clean(n)
	if n == "." || n == "" {
		return ".", nil
	}
	return n, nil
}

// under returns name relative to dir, or false when it is outside.
func under(name, dir string) (string, bool) {
	if dir == "." {
		return name, name != "."
	}
	rel, ok := strings.CutPrefix(name, dir+"/")
	return rel, ok && rel != ""
}

// limitedReader fails once more than left bytes are read.
type limitedReader struct {
	r        io.Reader
	left     int64
	exceeded bool
}

var errTooLarge = errors.New("artifact too large")

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// Allow a probe read to find EOF exactly at the limit.
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n > 0 {
			l.exceeded = true
			return 0, errTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

func wrapLimit(l *limitedReader, lim Limits, err error) error {
	if l.exceeded {
		return fmt.Errorf("artifact layer is larger than %d bytes, the limit: raise the artifact size limit if it is legitimate", lim.Compressed)
	}
	return err
}
