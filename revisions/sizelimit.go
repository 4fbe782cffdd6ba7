package revisions

import (
	"encoding/base64"
	"fmt"

	"github.com/legate-dev/legate/render"
)

// SizeLimit is implemented by a Store that cannot hold revisions past a
// size: a Kubernetes object is at most about 1.5 MiB. The engine refuses
// to apply a revision whose stored size is larger, with an error that
// names the node, the size and the limit, rather than serve what it could
// not persist. RevisionSize returns the bytes cfg takes as the store
// stores it (a store may compress) and the most it holds.
type SizeLimit interface {
	RevisionSize(cfg *render.NodeConfig) (size, limit int)
}

// DefaultMaxRevisionBytes bounds a revision's encoded content when the
// store says nothing (see SizeLimit).
const DefaultMaxRevisionBytes = 64 << 20

// checkSize refuses a configuration larger than the store can hold.
func (e *Engine) checkSize(node string, cfg *render.NodeConfig) error {
	size, limit := EncodedSize(cfg), DefaultMaxRevisionBytes
	if l, ok := e.store.(SizeLimit); ok {
		size, limit = l.RevisionSize(cfg)
	}
	if size > limit {
		return fmt.Errorf("the configuration of node %q takes %d bytes encoded; the revision store holds at most %d per revision: split the node's configuration or shrink it", node, size, limit)
	}
	return nil
}

// EncodedSize estimates, from above, the size of cfg as a store encodes
// it (JSON, bodies in base64), without encoding it.
func EncodedSize(cfg *render.NodeConfig) int {
	const overhead = 96 // field names, quotes, position numbers
	size := overhead + len(cfg.NodeID) + len(cfg.Hash)
	for url, set := range cfg.Types {
		size += overhead + len(url) + len(set.Hash)
		for _, r := range set.Resources {
			size += overhead + len(r.Name) + base64.StdEncoding.EncodedLen(len(r.Body)) + len(r.Source.File)
		}
	}
	for _, x := range cfg.ExternalSecrets {
		size += overhead + len(x.Name) + len(x.Ref) + len(x.Key) + len(x.Kind) + len(x.Source.File)
	}
	for _, x := range cfg.ExternalEndpoints {
		size += overhead + len(x.ClusterName) + len(x.Namespace) + len(x.Selector) + len(x.TargetPort) + len(x.Source.File)
	}
	return size
}
