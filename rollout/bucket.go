package rollout

import (
	"crypto/sha256"
	"encoding/binary"
	"net"
)

// ProxyBucket places a proxy in one of Buckets buckets by its identity, so
// that every replica puts it on the same side of a split and a proxy that
// reconnects keeps its side. The identity is the certificate principal
// and the pod name when either is known; otherwise the node ID and the
// peer's host (without port: a reconnect comes from a new port).
func ProxyBucket(principal, pod, node, address string) int {
	if principal != "" || pod != "" {
		return bucket("proxy", principal, pod)
	}
	host := address
	if h, _, err := net.SplitHostPort(address); err == nil {
		host = h
	}
	return bucket("addr", node, host)
}

// NodeBucket places a node ID in a bucket, for a nodes step given as a
// share of the source's nodes.
func NodeBucket(node string) int { return bucket("node", node, "") }

// bucket hashes its parts, separated so that ("ab", "c") and ("a", "bc")
// differ. SHA-256 rather than a faster hash: it runs once per stream, and
// its spread is even for any identities.
func bucket(kind, a, b string) int {
	h := sha256.New()
	for _, p := range []string{kind, a, b} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	var sum [sha256.Size]byte
	return int(binary.BigEndian.Uint64(h.Sum(sum[:0])[:8]) % Buckets)
}

// InShare reports whether a bucket is within a share given in basis
// points: the canaries of a 10% step are buckets 0..999.
func InShare(bucket, share int) bool { return bucket < share }
