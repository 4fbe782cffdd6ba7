package oci

import "strings"

// ParseRevision reads a revision (the org.opencontainers.image.revision
// annotation, a Flux artifact's revision) in
// the forms Flux and CI tools write: "main@sha1:<sha>", "sha1:<sha>",
// "main/<sha>" (Flux before v2.1) and a bare "<sha>". It returns the ref
// (possibly "") and the commit, or ok false when no commit SHA is found.
func ParseRevision(v string) (ref, commit string, ok bool) {
	v = strings.TrimSpace(v)
	if r, c, found := strings.Cut(v, "@sha1:"); found && isHexSHA(c) {
		return r, strings.ToLower(c), true
	}
	if c, found := strings.CutPrefix(v, "sha1:"); found && isHexSHA(c) {
		return "", strings.ToLower(c), true
	}
	if i := strings.LastIndex(v, "/"); i >= 0 && isHexSHA(v[i+1:]) {
		return v[:i], strings.ToLower(v[i+1:]), true
	}
	if isHexSHA(v) {
		return "", strings.ToLower(v), true
	}
	return "", "", false
}

// isHexSHA accepts SHA-1 (40) and SHA-256 (64) object names.
func isHexSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') && (r < 'A' || r > 'F') {
			return false
		}
	}
	return true
}
