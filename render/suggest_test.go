package render

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSuggest(t *testing.T) {
	fields := []string{"nodeID", "serialization", "envoyAPI", "envoyResources", "resources"}
	for _, tc := range []struct {
		word, want string
	}{
		{"nodeId", "nodeID"},       // case only
		{"nodeid", "nodeID"},       // case only
		{"resource", "resources"},  // a dropped letter
		{"reosurces", "resources"}, // a swapped pair
		{"serialisation", "serialization"},
		{"envoyResource", "envoyResources"},
		{"node", ""},      // too far from nodeID for its length
		{"spec", ""},      // nothing close
		{"resources", ""}, // known: nothing to suggest
		{"", ""},
	} {
		assert.Equal(t, tc.want, Suggest(tc.word, fields), "Suggest(%q)", tc.word)
	}
	assert.Equal(t, ", did you mean nodeID", DidYouMean("nodeId", fields))
	assert.Empty(t, DidYouMean("xyz", fields))
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"a", "", 1},
		{"", "ab", 2},
		{"kitten", "sitting", 3},
		{"ab", "ba", 1},
		{"abc", "abc", 0},
		{"café", "cafe", 1},
	} {
		assert.Equal(t, tc.want, editDistance(tc.a, tc.b), "%q/%q", tc.a, tc.b)
	}
}
