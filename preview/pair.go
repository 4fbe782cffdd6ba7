package preview

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io/fs"
	"path"
	"strings"
	"sync"
	"testing/fstest"

	"github.com/legate-dev/legate/render"
)

// Pair is how RenderPair rendered the two sides.
type Pair struct {
	// Shared says that the base's unchanged nodes were taken from the
	// head's render instead of being rendered a second time.
	Shared bool
	// BaseRendered counts the base's nodes rendered (all of them when
	// nothing was shared).
	BaseRendered int
	// Why says why nothing was shared ("" when Shared).
	Why string
}

// RenderPair renders base and head for Compare, as renderFn renders
// (limits must hold the options renderFn renders with: its limits and
// default node). A diff renders twice; to keep it near the time of one
// render, a node whose files are byte for byte the same on both sides is
// rendered once, on the head, when that is provably what rendering the
// base would give: every configuration file belongs to exactly one node
// by the nodes/<nodeID>/ convention (no legate.yaml, no CUE file, no
// symbolic link, no default node), the limits hold, and every resource of
// the head's render comes from a file of its own node. Then a node's
// configuration depends on its files alone, since render checks names,
// references, listener addresses and policies per node. The base is then
// rendered from its changed nodes' files only. In any other case both
// sides are rendered in full, side by side.
func RenderPair(base, head fs.FS, limits render.Options, renderFn func(fs.FS) *render.Result) (Fleet, Fleet, Pair) {
	// The head is rendered whatever the base, from the start: on two
	// cores the reading of both trees and the base's render run beside it.
	headDone := make(chan *render.Result, 1)
	go func() { headDone <- renderFn(head) }()
	var headIdx, baseIdx *treeIndex
	var headErr, baseErr error
	var wg sync.WaitGroup
	wg.Go(func() { headIdx, headErr = indexTree(head, limits, false) })
	baseIdx, baseErr = indexTree(base, limits, true)
	wg.Wait()
	why := ""
	switch {
	case limits.DefaultNode != "":
		why = "a default node is set"
	case headErr != nil:
		why = "head: " + headErr.Error()
	case baseErr != nil:
		why = "base: " + baseErr.Error()
	}
	if why != "" {
		return renderBase(base, headDone, renderFn, why)
	}

	// The base's changed nodes, as a tree of their files only.
	sub := fstest.MapFS{}
	changed := 0
	for node, files := range baseIdx.nodes {
		if h, ok := headIdx.nodes[node]; ok && h.sum == files.sum {
			continue
		}
		changed++
		for _, p := range files.paths {
			sub[p] = &fstest.MapFile{Data: baseIdx.data[p], Mode: 0o644}
		}
	}
	baseIdx.data = nil
	if changed*2 > len(baseIdx.nodes) {
		// Most nodes changed: the base's full render costs about the
		// same and needs no proof of locality.
		return renderBase(base, headDone, renderFn, "most nodes changed")
	}
	subRes := &render.Result{}
	if changed > 0 {
		subRes = renderFn(sub)
	}
	headRes := <-headDone
	headDone <- headRes // for renderBase
	if len(headRes.Diagnostics) > 0 {
		// An invalid head: rare, and its diagnostics may be the limits'
		// (not any one node's); no sharing to reason about.
		return renderBase(base, headDone, renderFn, "the head does not render")
	}
	if err := ownFiles(headRes); err != nil {
		return renderBase(base, headDone, renderFn, "head: "+err.Error())
	}
	if err := ownFiles(subRes); err != nil {
		return renderBase(base, headDone, renderFn, "base: "+err.Error())
	}
	nodes := make(map[string]*render.NodeConfig, len(baseIdx.nodes))
	resources := 0
	for node, files := range baseIdx.nodes {
		src := subRes.Nodes
		if h, ok := headIdx.nodes[node]; ok && h.sum == files.sum {
			src = headRes.Nodes
		}
		if nc := src[node]; nc != nil {
			nodes[node] = nc
			resources += countResources(nc)
		}
	}
	if max := limitOr(limits.MaxResources, render.DefaultMaxResources); resources > max {
		return renderBase(base, headDone, renderFn, "the base is over the resource limit")
	}
	baseFleet := Fleet{Nodes: nodes, Diagnostics: subRes.Diagnostics, Warnings: subRes.Warnings}
	if len(subRes.Diagnostics) > 0 {
		baseFleet.Nodes = subRes.Nodes
	}
	return baseFleet, FleetOf(headRes), Pair{Shared: true, BaseRendered: changed}
}

// renderBase renders the base in full, beside the head's render (which
// headDone delivers).
func renderBase(base fs.FS, headDone chan *render.Result, renderFn func(fs.FS) *render.Result, why string) (Fleet, Fleet, Pair) {
	b := renderFn(base)
	h := <-headDone
	return FleetOf(b), FleetOf(h), Pair{BaseRendered: len(b.Nodes), Why: why}
}

// renderBoth renders both sides in full, side by side.
func renderBoth(base, head fs.FS, renderFn func(fs.FS) *render.Result, why string) (Fleet, Fleet, Pair) {
	headDone := make(chan *render.Result, 1)
	go func() { headDone <- renderFn(head) }()
	return renderBase(base, headDone, renderFn, why)
}

// treeIndex is a tree's configuration files per node.
type treeIndex struct {
	nodes map[string]*nodeFiles
	// data holds the files' content (kept for the base only).
	data map[string][]byte
}

// nodeFiles are one node's files: their paths in walk order and a digest
// of paths and contents.
type nodeFiles struct {
	paths []string
	sum   [sha256.Size]byte
	h     []byte // paths and contents, hashed once the walk ends
}

// indexTree reads the configuration files of fsys as render.Load would
// (the same files skipped: hidden directories, other extensions,
// kustomization files, binary files) and groups them by node. It fails
// when a file's node does not follow from its path alone, or when the
// render's limits would cut the tree.
func indexTree(fsys fs.FS, limits render.Options, keep bool) (*treeIndex, error) {
	idx := &treeIndex{nodes: map[string]*nodeFiles{}}
	if keep {
		idx.data = map[string][]byte{}
	}
	maxFile := int64(limitOr(int(limits.MaxFileSize), render.DefaultMaxFileSize))
	maxTotal := int64(limitOr(int(limits.MaxTotalSize), render.DefaultMaxTotalSize))
	maxFiles := limitOr(limits.MaxFiles, render.DefaultMaxFiles)
	var files int
	var total int64
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != "." && strings.HasPrefix(name, ".") {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			return errors.New(p + " is a symbolic link")
		case name == render.TargetFile:
			return errors.New(p + " targets nodes")
		case path.Ext(name) == ".cue":
			return errors.New(p + " is CUE")
		}
		switch path.Ext(name) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		if strings.HasPrefix(strings.ToLower(name), "kustomization.") {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		files++
		total += int64(len(data))
		if int64(len(data)) > maxFile || files > maxFiles || total > maxTotal {
			return errors.New("over the render's limits")
		}
		if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
			return nil // binary: render skips it
		}
		node := nodeOfPath(p)
		if node == "" {
			return errors.New(p + " is in no nodes/<nodeID>/ directory")
		}
		nf := idx.nodes[node]
		if nf == nil {
			nf = &nodeFiles{}
			idx.nodes[node] = nf
		}
		nf.paths = append(nf.paths, p)
		h := sha256.Sum256(data)
		nf.h = append(append(append(nf.h, p...), 0), h[:]...)
		if keep {
			idx.data[p] = data
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, nf := range idx.nodes {
		nf.sum, nf.h = sha256.Sum256(nf.h), nil
	}
	return idx, nil
}

// nodeOfPath is the node the nodes/<nodeID>/ convention gives a file (the
// innermost "nodes" directory with a file below its node's directory), as
// render applies it; "" when none.
func nodeOfPath(p string) string {
	parts := strings.Split(p, "/")
	for i := len(parts) - 3; i >= 0; i-- {
		if parts[i] == "nodes" {
			return parts[i+1]
		}
	}
	return ""
}

// ownFiles checks that every resource of every node of res was defined in
// a file of that node's directory.
func ownFiles(res *render.Result) error {
	for node, nc := range res.Nodes {
		for _, ts := range nc.Types {
			for _, r := range ts.Resources {
				if nodeOfPath(r.Source.File) != node {
					return errors.New("node " + node + " has a resource from " + r.Source.File)
				}
			}
		}
	}
	return nil
}

func countResources(nc *render.NodeConfig) int {
	n := 0
	for _, ts := range nc.Types {
		n += len(ts.Resources)
	}
	return n
}

func limitOr(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}
