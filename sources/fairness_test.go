package sources

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Each step is "+ns" (a fetch of ns asks for a worker; "!" after it when
// it must wait) or "-ns" (a fetch of ns ends).
func TestFairShare(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		workers, perNamespace int
		steps                 string
	}{
		{"one namespace takes at most its cap", 4, 2, "+a +a +a! +b"},
		{"a cap frees as its fetches end", 4, 2, "+a +a +a! -a +a +a!"},
		{"the last worker stays for a namespace that fetches nothing", 4, 2, "+a +a +b +b! +c +d!"},
		{"two hung namespaces leave a worker to a third", 4, 2, "+a +a +b +b! +c"},
		{"a waiting namespace gets the worker that frees", 4, 2, "+a +a +b +c -a +a! -b +a"},
		{"one worker serves anyone in turn", 1, 1, "+a +a! -a +b"},
		{"the cap is at least one", 3, 0, "+a +a! +b"},
		{"the cap is at most the workers", 2, 5, "+a +a! +b"},
		{"a release without a fetch is ignored", 2, 1, "-a +a +a! -b +b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFairShare(tc.workers, tc.perNamespace)
			for i, step := range strings.Fields(tc.steps) {
				ns := strings.TrimSuffix(step[1:], "!")
				if step[0] == '-' {
					f.Release(ns)
					continue
				}
				want := !strings.HasSuffix(step, "!")
				assert.Equal(t, want, f.Acquire(ns), "step %d %q", i, step)
			}
		})
	}
}
