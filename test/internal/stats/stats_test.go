package stats

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestPercentile(t *testing.T) {
	tests := []struct {
		xs   []float64
		p    float64
		want float64
	}{
		{nil, 50, 0},
		{[]float64{3}, 99, 3},
		{[]float64{5, 1, 3, 2, 4}, 50, 3},
		{[]float64{5, 1, 3, 2, 4}, 99, 5},
		{[]float64{1, 2, 3, 4}, 50, 2},
		{[]float64{1, 2, 3, 4}, 100, 4},
	}
	for _, tt := range tests {
		assert.InDelta(t, tt.want, Percentile(tt.xs, tt.p), 0, "%v p%v", tt.xs, tt.p)
	}
	assert.Equal(t, 2*time.Millisecond, Percentile([]time.Duration{3 * time.Millisecond, time.Millisecond, 2 * time.Millisecond}, 50))
}
