package jsonparse

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The parser's own limit names the depth, with the position it was hit at.
func TestJSONNestingLimitNamesThePosition(t *testing.T) {
	_, err := Parse([]byte("{\n\"a\":" + strings.Repeat("[", MaxDepth+5)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nesting deeper than 10000 levels")
	assert.Contains(t, err.Error(), "2:")

	// At the limit it still parses.
	_, err = Parse([]byte(strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1)))
	assert.NoError(t, err)
}
