package render

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"

	"github.com/legate-dev/legate/textbound"
)

// MaxNodeIDLength bounds a node ID, in bytes: the longest DNS name, which
// a certificate can name. EnvoyConfig's spec.nodeID is refused above it
// by the API server, a proxy whose node.id is longer is refused at stream
// start, and metric labels cut a longer one (NodeLabel).
const MaxNodeIDLength = 253

// labelKeep is how much of a long node ID its label keeps before the
// marker and the hash.
const labelKeep = 200

// NodeLabel is id as a metric label: id itself when it is at most
// MaxNodeIDLength bytes of valid UTF-8, else its first bytes (on a rune
// boundary), "…" and 16 hex digits of its SHA-256, so that /metrics stays
// bounded whatever a file or a proxy names and two long IDs keep apart.
func NodeLabel(id string) string {
	if len(id) <= MaxNodeIDLength && utf8.ValidString(id) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	keep := textbound.Prefix(strings.ToValidUTF8(id, "\uFFFD"), labelKeep)
	return keep + "…" + hex.EncodeToString(sum[:8])
}
