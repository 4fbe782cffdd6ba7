package render

import "strings"

// Suggest returns the candidate a user most likely meant by word — a
// field, flag or key name mistyped by case, a dropped letter or a swapped
// pair — or "" when none is close enough to be worth naming. A case-only
// difference (nodeId for nodeID) always wins; otherwise the edit distance
// must be at most a third of the word, so that short words are not
// "corrected" into unrelated ones.
func Suggest(word string, candidates []string) string {
	if word == "" || len(word) > maxSuggestLen {
		return ""
	}
	for _, c := range candidates {
		if c != word && strings.EqualFold(c, word) {
			return c
		}
	}
	best, bestDist := "", len(word)/3+1
	for _, c := range candidates {
		if c == word || len(c) > maxSuggestLen {
			continue
		}
		if d := editDistance(strings.ToLower(word), strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// maxSuggestLen bounds the words compared: the distance costs the product
// of both lengths, and no field or flag name is this long.
const maxSuggestLen = 64

// DidYouMean is Suggest as the tail of a message: `, did you mean "x"` or
// nothing.
func DidYouMean(word string, candidates []string) string {
	if s := Suggest(word, candidates); s != "" {
		return ", did you mean " + s
	}
	return ""
}

// editDistance is the optimal-string-alignment distance: insertions,
// deletions, substitutions and swaps of two neighbours each cost one.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
