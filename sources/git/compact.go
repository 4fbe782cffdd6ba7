package git

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Every fetch leaves one pack (and its index) in the clone, and go-git
// looks an object up in every index in turn, loads them all when it opens
// the clone, and the size check walks them: a source polled for months
// would pay for each commit it ever fetched. git itself repacks once
// packs pile up (gc.autoPackLimit); the clone does the same, keeping the
// packs in a geometric progression (git repack --geometric=2): the
// smallest packs are merged until each remaining pack is at least twice
// as large as all smaller ones together. The number of packs then grows
// with the logarithm of the clone's size, and each object is rewritten a
// logarithmic number of times over the clone's life.

const (
	// compactAbove is the number of packs past which a fetch merges
	// packs: a few fetches' worth is cheaper to search than to merge.
	compactAbove = 16
	// compactMaxBytes bounds the packs merged at once (the encoder holds
	// their objects in memory); larger packs stay as they are.
	compactMaxBytes = 32 << 20
	// compactWindow is the delta window of the merged pack: the trees of
	// consecutive commits differ in a few entries, and fetched packs carry
	// them whole.
	compactWindow = 10
)

type packInfo struct {
	hash plumbing.Hash
	size int64
}

// toMerge picks, from packs in any order, the smallest ones whose sizes
// break the geometric progression; nil when fewer than two would merge.
func toMerge(packs []packInfo, maxBytes int64) []packInfo {
	sorted := append([]packInfo(nil), packs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].size < sorted[j].size })
	n, acc := 0, int64(0)
	for n < len(sorted) && (n == 0 || sorted[n].size < 2*acc) && acc+sorted[n].size <= maxBytes {
		acc += sorted[n].size
		n++
	}
	if n < 2 {
		return nil
	}
	return sorted[:n]
}

// compact merges the clone's smallest packs when it holds more than
// compactAbove of them.
func (s *Source) compact(st *filesystem.Storage) error {
	hashes, err := st.ObjectPacks()
	if err != nil || len(hashes) <= compactAbove {
		return err
	}
	packDir := filepath.Join(s.c.dir, "objects", "pack")
	packs := make([]packInfo, 0, len(hashes))
	for _, h := range hashes {
		fi, err := os.Stat(filepath.Join(packDir, "pack-"+h.String()+".pack"))
		if err != nil {
			return err
		}
		packs = append(packs, packInfo{hash: h, size: fi.Size()})
	}
	merge := toMerge(packs, compactMaxBytes)
	if merge == nil {
		return nil
	}
	var objects []plumbing.Hash
	for _, p := range merge {
		hs, err := packObjects(filepath.Join(packDir, "pack-"+p.hash.String()+".idx"))
		if err != nil {
			return err
		}
		objects = append(objects, hs...)
	}
	w, err := st.PackfileWriter()
	if err != nil {
		return err
	}
	if _, err := packfile.NewEncoder(w, st, false).Encode(objects, compactWindow); err != nil {
		_ = w.Close()
		return fmt.Errorf("write merged pack: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("write merged pack: %w", err)
	}
	// The merged packs may be open and indexed: close them before they
	// go, and have the indexes read again from what stays.
	if err := st.Close(); err != nil {
		return err
	}
	for _, p := range merge {
		if err := st.DeleteOldObjectPackAndIndex(p.hash, time.Time{}); err != nil {
			return err
		}
	}
	st.Reindex()
	return nil
}

// packObjects lists the objects of a pack from its index.
func packObjects(idxPath string) ([]plumbing.Hash, error) {
	f, err := os.Open(idxPath) //nolint:gosec // a path inside the clone, built from a pack hash
	if err != nil {
		return nil, err
	}
	defer f.Close() //nolint:errcheck // read only
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(f).Decode(idx); err != nil {
		return nil, fmt.Errorf("read pack index %s: %w", idxPath, err)
	}
	entries, err := idx.Entries()
	if err != nil {
		return nil, err
	}
	defer entries.Close() //nolint:errcheck // in memory
	var hs []plumbing.Hash
	for {
		e, err := entries.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read pack index %s: %w", idxPath, err)
		}
		hs = append(hs, e.Hash)
	}
	return hs, nil
}
