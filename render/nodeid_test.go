package render

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestNodeLabel(t *testing.T) {
	assert.Equal(t, "edge", NodeLabel("edge"))
	max := strings.Repeat("a", MaxNodeIDLength)
	assert.Equal(t, max, NodeLabel(max), "the bound itself is kept")

	long := strings.Repeat("a", 1<<20)
	got := NodeLabel(long)
	assert.LessOrEqual(t, len(got), MaxNodeIDLength)
	assert.True(t, strings.HasPrefix(got, strings.Repeat("a", labelKeep)+"…"))
	assert.NotEqual(t, got, NodeLabel(long+"b"), "two long IDs keep apart")
	assert.Equal(t, got, NodeLabel(long), "stable")

	runes := strings.Repeat("é", 300) // 600 bytes, a cut would split a rune
	assert.True(t, utf8.ValidString(NodeLabel(runes)))
	assert.LessOrEqual(t, len(NodeLabel(runes)), MaxNodeIDLength)
	assert.True(t, utf8.ValidString(NodeLabel("bad\xffid")), "Prometheus refuses invalid UTF-8")
}
