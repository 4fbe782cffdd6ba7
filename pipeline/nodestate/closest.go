package nodestate

import (
	"slices"
	"unicode/utf8"

	"github.com/legate-dev/legate/render"
)

// maxCompared bounds the runes of a node ID that Closest compares: node
// IDs come from proxies, and the distance costs the product of the two
// lengths.
const maxCompared = 64

// Closest returns at most n of the configured node IDs nearest to id by
// edit distance (Levenshtein, on runes), nearest first, ties in name
// order. Only plausible typos are offered: a candidate at most a third of
// the longer ID's length away (at least 2 edits).
func Closest(id string, configured []string, n int) []string {
	type cand struct {
		id   string
		dist int
	}
	a := clip(id)
	var found []cand
	for _, c := range configured {
		if c == id {
			continue
		}
		b := clip(c)
		limit := max(2, max(len(a), len(b))/3)
		if abs(len(a)-len(b)) > limit {
			continue // cannot be within the limit: skip the quadratic part
		}
		if d := render.EditDistance(string(a), string(b)); d <= limit {
			found = append(found, cand{c, d})
		}
	}
	slices.SortFunc(found, func(x, y cand) int {
		if x.dist != y.dist {
			return x.dist - y.dist
		}
		if x.id < y.id {
			return -1
		}
		if x.id > y.id {
			return 1
		}
		return 0
	})
	out := make([]string, 0, min(n, len(found)))
	for _, c := range found[:min(n, len(found))] {
		out = append(out, c.id)
	}
	return out
}

func clip(s string) []rune {
	out := make([]rune, 0, min(len(s), maxCompared))
	for len(s) > 0 && len(out) < maxCompared {
		r, size := utf8.DecodeRuneInString(s)
		out = append(out, r)
		s = s[size:]
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
