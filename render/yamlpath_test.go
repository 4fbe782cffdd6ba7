package render

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A position in a document is named by the field path of the node there,
// the inverse of YAMLFieldPosition.
func TestYAMLFieldPathAt(t *testing.T) {
	doc := []byte(`apiVersion: legate.dev/v1alpha1
kind: EnvoyConfig
spec:
  nodeID: edge
  resources:
  - type: cluster
    value:
      name: backend
      connect_timeout: -1s
  - type: listener
    value:
      name: main
`)
	for _, tc := range []struct {
		line, column int
		want         string
	}{
		{4, 3, "spec.nodeID"},
		{4, 11, "spec.nodeID"},
		{9, 7, "spec.resources[0].value.connect_timeout"},
		{9, 24, "spec.resources[0].value.connect_timeout"},
		{10, 5, "spec.resources[1].type"},
		{12, 7, "spec.resources[1].value.name"},
		{0, 0, ""},
	} {
		assert.Equal(t, tc.want, YAMLFieldPathAt(doc, tc.line, tc.column), "%d:%d", tc.line, tc.column)
	}
	for _, field := range []string{"spec.nodeID", "spec.resources[0].value.connect_timeout", "spec.resources[1].value.name"} {
		line, col := YAMLFieldPosition(doc, field)
		assert.Equal(t, field, YAMLFieldPathAt(doc, line, col), "round trip of %s", field)
	}
	assert.Empty(t, YAMLFieldPathAt([]byte("a: [b"), 1, 1), "a document that does not parse has no paths")
}
