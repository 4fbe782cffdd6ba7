// Package textbound cuts text to a byte bound without splitting a UTF-8
// sequence. Every place that keeps text it did not write (a proxy's NACK,
// a node ID in a metric label, a condition message, an event note) bounds
// it, and a cut through a multi-byte rune would leave invalid UTF-8 that
// Prometheus, the API server or a forge refuses. It is a leaf: it imports
// nothing of legate, so every stage and both homes may use it without
// bending the import rules (render, the lowest stage, would also do, but
// cutting text is not rendering).
package textbound

import "unicode/utf8"

// Prefix returns s when it is at most n bytes long, else its longest
// prefix of at most n bytes that ends before a rune starts, so that no
// UTF-8 sequence is split. It does not repair bytes that are not UTF-8:
// a prefix of them is kept as it is, and when no rune starts at or before
// byte n (s begins with stray continuation bytes) nothing is kept. n ≤ 0
// keeps nothing.
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	// s[n] exists because len(s) > n; a cut right before a byte that
	// starts a rune (or is ASCII) splits nothing.
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Cut returns s when it is at most n bytes long, else its Prefix followed
// by marker (which says that text was cut), the whole at most n bytes: the
// marker counts toward n. When the marker alone does not fit in n, Cut
// returns as much of the marker as fits.
func Cut(s string, n int, marker string) string {
	if len(s) <= n {
		return s
	}
	if len(marker) >= n {
		return Prefix(marker, n)
	}
	return Prefix(s, n-len(marker)) + marker
}
