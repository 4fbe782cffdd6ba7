// Command semvermax prints the highest of the module versions it reads, one
// a line, by semantic versioning's precedence (Go's pseudo-versions are
// prereleases, so v1.2.3 is above v1.2.3-0.20260101000000-abcdef123456).
// hack/tools-aligned.sh uses it to pick the version two builds share.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

func main() {
	var best string
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		v := strings.TrimSpace(sc.Text())
		if v == "" {
			continue
		}
		if _, _, ok := split(v); !ok {
			fmt.Fprintf(os.Stderr, "semvermax: %q is not a semantic version\n", v)
			os.Exit(2)
		}
		if best == "" || compare(v, best) > 0 {
			best = v
		}
	}
	if best == "" {
		fmt.Fprintln(os.Stderr, "semvermax: no versions on standard input")
		os.Exit(2)
	}
	fmt.Fprintln(os.Stdout, best)
}

// split returns a version's three numbers and its prerelease identifiers
// (build metadata dropped: it has no precedence).
func split(v string) (nums [3]int, pre []string, ok bool) {
	v, found := strings.CutPrefix(v, "v")
	if !found {
		return nums, nil, false
	}
	v, _, _ = strings.Cut(v, "+")
	core, p, hasPre := strings.Cut(v, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return nums, nil, false
	}
	for i, s := range parts {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nums, nil, false
		}
		nums[i] = n
	}
	if hasPre {
		pre = strings.Split(p, ".")
	}
	return nums, pre, true
}

func compare(a, b string) int {
	an, ap, _ := split(a)
	bn, bp, _ := split(b)
	for i := range an {
		if an[i] != bn[i] {
			return cmpInt(an[i], bn[i])
		}
	}
	switch {
	case len(ap) == 0 && len(bp) == 0:
		return 0
	case len(ap) == 0:
		return 1 // a release is above its prereleases
	case len(bp) == 0:
		return -1
	}
	for i := 0; i < len(ap) && i < len(bp); i++ {
		if c := comparePre(ap[i], bp[i]); c != 0 {
			return c
		}
	}
	return cmpInt(len(ap), len(bp))
}

// comparePre orders two prerelease identifiers: numeric ones by value and
// below alphanumeric ones, alphanumeric ones in ASCII order.
func comparePre(a, b string) int {
	an, aerr := strconv.Atoi(a)
	bn, berr := strconv.Atoi(b)
	switch {
	case aerr == nil && berr == nil:
		return cmpInt(an, bn)
	case aerr == nil:
		return -1
	case berr == nil:
		return 1
	}
	return strings.Compare(a, b)
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
