// Package stats holds the small statistics the benchmark harnesses report.
package stats

import (
	"cmp"
	"math"
	"slices"
)

// Percentile is the nearest-rank p-th percentile (0 < p <= 100) of xs, which
// need not be sorted; the zero value for no samples.
func Percentile[T cmp.Ordered](xs []T, p float64) T {
	var zero T
	if len(xs) == 0 {
		return zero
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank-1, 0), len(s)-1)]
}
