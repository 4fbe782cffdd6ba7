package revisions_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
)

// A node ID from a file is not bounded by the CRD: its metric labels
// are, so a long ID cannot grow /metrics by its length per series.
func TestMetricLabelsOfLongNodeIDsAreBounded(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	long := strings.Repeat("n", 2000)
	cfg := config("l1", "c1")
	cfg.NodeID = long
	require.NoError(t, h.e.Apply(context.Background(), long, cfg, gitOrigin("sha1")))

	mfs, err := h.reg.Gather()
	require.NoError(t, err)
	series := 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "node" {
					series++
					assert.LessOrEqual(t, len(l.GetValue()), render.MaxNodeIDLength, mf.GetName())
					assert.Equal(t, render.NodeLabel(long), l.GetValue(), mf.GetName())
				}
			}
		}
	}
	assert.Positive(t, series, "the node has series")
}
